import { describe, expect, it } from 'vitest';
import { checkIp, checkWebhookUrl, resolveTarget } from '../../src/webhooks/addressPolicy.js';

/** The SSRF guard's address rules (spec 6.1), with DNS answers injected so no test touches a resolver. */

const dns: Record<string, string[]> = {
  'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'v6-first.example.com': ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', '93.184.215.14'],
  'internal.example.com': ['10.1.2.3'],
  'metadata.example.com': ['169.254.169.254'],
  'mixed.example.com': ['93.184.215.14', '192.168.0.10'],
  'mixed-v6.example.com': ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', 'fd12:3456::1'],
  'v6-loopback.example.com': ['::1'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
  'empty.example.com': [],
};
const lookup = async (hostname: string) => {
  const found = dns[hostname];
  if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return found;
};

async function verdict(url: string, allowPrivate = false) {
  const checked = checkWebhookUrl(url);
  if (!checked.ok) return checked;
  return resolveTarget(checked.url, { allowPrivate, lookup });
}

describe('refused addresses', () => {
  it.each([
    // IPv4, one or more per range
    ['https://0.0.0.0/', /unspecified/],
    ['https://0.1.2.3/', /unspecified/],
    ['https://10.0.0.1/', /10\.0\.0\.1 is a private address/],
    ['https://100.64.0.1/', /CGNAT/],
    ['https://100.127.255.255/', /CGNAT/],
    ['https://127.0.0.1/', /127\.0\.0\.1 is a loopback address/],
    ['https://127.255.255.254/', /loopback/],
    ['https://169.254.169.254/', /link-local/],
    ['https://172.16.0.1/', /private/],
    ['https://172.31.255.255/', /private/],
    ['https://192.0.0.8/', /IETF protocol assignment/],
    ['https://192.0.2.1/', /documentation/],
    ['https://192.168.1.1/', /private/],
    ['https://198.18.0.1/', /benchmarking/],
    ['https://198.19.255.255/', /benchmarking/],
    ['https://198.51.100.7/', /documentation/],
    ['https://203.0.113.9/', /documentation/],
    ['https://224.0.0.251/', /multicast/],
    ['https://239.255.255.250/', /multicast/],
    ['https://240.0.0.1/', /reserved/],
    ['https://255.255.255.255/', /broadcast/],
    // other spellings of 127.0.0.1, which the URL parser canonicalises
    ['https://2130706433/', /127\.0\.0\.1 is a loopback/],
    ['https://0x7f.0.0.1/', /127\.0\.0\.1 is a loopback/],
    ['https://0177.0.0.1/', /127\.0\.0\.1 is a loopback/],
    ['https://127.1/', /127\.0\.0\.1 is a loopback/],
    ['https://0x7f000001/', /127\.0\.0\.1 is a loopback/],
    // IPv6, one or more per range
    ['https://[::]/', /unspecified/],
    ['https://[::1]/', /loopback/],
    ['https://[0:0:0:0:0:0:0:1]/', /loopback/],
    ['https://[fe80::abcd]/', /link-local/],
    ['https://[febf:ffff::1]/', /link-local/],
    ['https://[fec0::1]/', /site-local/],
    ['https://[fc00::1]/', /unique-local/],
    ['https://[fdff:ffff::1]/', /unique-local/],
    ['https://[ff02::1]/', /multicast/],
    ['https://[2001:db8::1]/', /documentation/],
    ['https://[100::1]/', /discard-only/],
    // IPv6 forms that embed a private IPv4 address
    ['https://[::ffff:127.0.0.1]/', /IPv4-mapped form of 127\.0\.0\.1\) is a loopback/],
    ['https://[::ffff:7f00:1]/', /IPv4-mapped form of 127\.0\.0\.1\) is a loopback/],
    ['https://[::ffff:a9fe:a9fe]/', /IPv4-mapped form of 169\.254\.169\.254\) is a link-local/],
    ['https://[::127.0.0.1]/', /IPv4-compatible form of 127\.0\.0\.1\) is a loopback/],
    ['https://[::10.0.0.1]/', /IPv4-compatible form of 10\.0\.0\.1\) is a private/],
    ['https://[64:ff9b::a00:1]/', /NAT64 form of 10\.0\.0\.1\) is a private/],
    ['https://[64:ff9b::c0a8:1]/', /NAT64 form of 192\.168\.0\.1\) is a private/],
    ['https://[2002:c0a8:101::]/', /6to4 form of 192\.168\.1\.1\) is a private/],
    ['https://[2002:7f00:1::]/', /6to4 form of 127\.0\.0\.1\) is a loopback/],
    ['https://[64:ff9b::7f00:1]/', /NAT64 form of 127\.0\.0\.1\) is a loopback/],
    ['https://[64:ff9b::a9fe:a9fe]/', /NAT64 form of 169\.254\.169\.254\) is a link-local/],
    ['https://[64:ff9b::6440:1]/', /NAT64 form of 100\.64\.0\.1\) is a carrier-grade NAT/],
    ['https://[2002:a00:1::1]/', /6to4 form of 10\.0\.0\.1\) is a private/],
    ['https://[2002:a9fe:a9fe:1::]/', /6to4 form of 169\.254\.169\.254\) is a link-local/],
    ['https://[2002:ac10:1::]/', /6to4 form of 172\.16\.0\.1\) is a private/],
    ['https://[::ffff:0:a00:1]/', /IPv4-translated form of 10\.0\.0\.1\) is a private/],
    // NAT64's local-use prefix may embed an address anywhere, so all of it is refused
    ['https://[64:ff9b:1::a00:1]/', /local-use NAT64/],
    ['https://[64:ff9b:1:808:808::]/', /local-use NAT64/],
    // Teredo reaches an IPv4 host through a relay; the client address is only obfuscated
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', /Teredo/],
    ['https://[2001::1]/', /Teredo/],
    ['https://[2001:0:ffff:ffff::]/', /Teredo/],
    // the rest of ipaddr.js's special ranges
    ['https://192.88.99.1/', /reserved/],
    ['https://192.175.48.1/', /AS112/],
    ['https://[2001:2::1]/', /benchmarking/],
    ['https://[2001:20::1]/', /ORCHID/],
    ['https://[3fff::1]/', /documentation/],
    ['https://[5f00::1]/', /segment routing/],
    // names
    ['https://localhost/', /localhost is a loopback name/],
    ['https://LOCALHOST:8443/', /loopback name/],
    ['https://localhost./', /loopback name/],
    ['https://api.localhost/', /loopback name/],
    ['https://internal.example.com/', /internal\.example\.com resolves to 10\.1\.2\.3 is a private address/],
    ['https://metadata.example.com/latest', /link-local/],
    ['https://mixed.example.com/', /192\.168\.0\.10 is a private/],
    ['https://mixed-v6.example.com/', /fd12:3456::1 is a unique-local/],
    ['https://v6-loopback.example.com/', /loopback/],
    ['https://mapped.example.com/', /IPv4-mapped form of 127\.0\.0\.1\) is a loopback/],
    ['https://unknown.example.com/', /could not be resolved \(ENOTFOUND\)/],
    ['https://empty.example.com/', /has no address/],
    // the syntax rule
    ['http://hooks.example.com/', /only https:\/\//],
    ['ftp://hooks.example.com/', /only https:\/\//],
    ['https://user:secret@hooks.example.com/', /user name or password/],
    ['https://user@hooks.example.com/', /user name or password/],
    [`https://hooks.example.com/${'a'.repeat(2048)}`, /longer than 2048/],
    ['not a url', /is not a URL/],
    ['https://', /is not a URL/],
    // zones are for link-local use only; the URL parser refuses them, and so do we
    ['https://[fe80::1%25eth0]/', /is not a URL/],
  ])('%s', async (url, reason) => {
    const result = await verdict(url);
    expect(result.ok).toBe(false);
    expect((result as { reason: string }).reason).toMatch(reason);
  });

  it('refuses localhost names without asking DNS', async () => {
    const asked: string[] = [];
    const spy = async (hostname: string) => (asked.push(hostname), ['93.184.215.14']);
    for (const host of ['localhost', 'localhost.', 'foo.localhost']) {
      expect(await resolveTarget(new URL(`https://${host}/`), { allowPrivate: false, lookup: spy })).toMatchObject({ ok: false });
    }
    expect(asked).toEqual([]);
  });
});

describe('allowed addresses', () => {
  it.each([
    ['https://93.184.215.14/hook', '93.184.215.14', 4],
    ['https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', 6],
    ['https://hooks.example.com/csr?x=1', '93.184.215.14', 4],
    ['https://v6-first.example.com/', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', 6],
    // just outside the refused ranges
    ['https://172.15.255.255/', '172.15.255.255', 4],
    ['https://172.32.0.0/', '172.32.0.0', 4],
    ['https://100.63.255.255/', '100.63.255.255', 4],
    ['https://100.128.0.0/', '100.128.0.0', 4],
    ['https://198.20.0.0/', '198.20.0.0', 4],
    ['https://223.255.255.255/', '223.255.255.255', 4],
    ['https://[2001:db9::1]/', '2001:db9::1', 6],
    // embedded public IPv4 addresses are judged like the IPv4 address itself
    ['https://[::ffff:8.8.8.8]/', '::ffff:808:808', 6],
    ['https://[::8.8.8.8]/', '::808:808', 6],
    ['https://[64:ff9b::808:808]/', '64:ff9b::808:808', 6],
    ['https://[2002:808:808::]/', '2002:808:808::', 6],
  ])('%s connects to %s', async (url, address, family) => {
    expect(await verdict(url)).toEqual({ ok: true, address, family });
  });

  it('WEBHOOK_ALLOW_PRIVATE_TARGETS lifts the address rule, not the https rule nor the need for an address', async () => {
    expect(await verdict('https://127.0.0.1:8443/', true)).toEqual({ ok: true, address: '127.0.0.1', family: 4 });
    expect(await verdict('https://[::1]/', true)).toEqual({ ok: true, address: '::1', family: 6 });
    expect(await verdict('https://internal.example.com/', true)).toMatchObject({ ok: true, address: '10.1.2.3' });
    expect(await verdict('http://127.0.0.1/', true)).toMatchObject({ ok: false });
    expect(await verdict('https://empty.example.com/', true)).toMatchObject({ ok: false, reason: expect.stringMatching(/has no address/) });
    expect(await verdict('https://unknown.example.com/', true)).toMatchObject({ ok: false, reason: expect.stringMatching(/could not be resolved/) });
  });
});

describe('checkIp', () => {
  it('strips zones before judging, and refuses what it cannot parse', () => {
    expect(checkIp('fe80::1%eth0')).toEqual({ allowed: false, reason: 'fe80::1%eth0 is a link-local address' });
    expect(checkIp('127.0.0.1')).toEqual({ allowed: false, reason: '127.0.0.1 is a loopback address' });
    expect(checkIp('8.8.8.8')).toEqual({ allowed: true });
    for (const bad of ['not-an-ip', '', '127.0.0.1%x', '8.8.8.8%x', '[::1]', '0177.0.0.1', '2130706433']) {
      expect(checkIp(bad)).toEqual({ allowed: false, reason: `${bad} is not an IP address` });
    }
  });
});
