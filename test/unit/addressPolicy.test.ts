import { describe, expect, it } from 'vitest';
import { checkIp, checkWebhookUrl, parseIpv6, resolveTarget } from '../../src/webhooks/addressPolicy.js';

/** The SSRF guard's address rules (spec 6.1), with DNS answers injected. */

const dns: Record<string, string[]> = {
  'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'internal.example.com': ['10.1.2.3'],
  'metadata.example.com': ['169.254.169.254'],
  'mixed.example.com': ['93.184.215.14', '192.168.0.10'],
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
    ['https://127.0.0.1/', /loopback/],
    ['https://127.255.255.254/', /loopback/],
    ['https://2130706433/', /127\.0\.0\.1 is a loopback/],
    ['https://0x7f.0.0.1/', /127\.0\.0\.1 is a loopback/],
    ['https://0177.0.0.1/', /127\.0\.0\.1 is a loopback/],
    ['https://127.1/', /127\.0\.0\.1 is a loopback/],
    ['https://0.0.0.0/', /unspecified/],
    ['https://10.0.0.1/', /private/],
    ['https://172.31.255.255/', /private/],
    ['https://192.168.1.1/', /private/],
    ['https://169.254.169.254/', /link-local/],
    ['https://100.64.0.1/', /CGNAT/],
    ['https://100.127.255.255/', /CGNAT/],
    ['https://224.0.0.251/', /multicast/],
    ['https://255.255.255.255/', /reserved or broadcast/],
    ['https://198.18.0.1/', /benchmarking/],
    ['https://[::1]/', /loopback/],
    ['https://[::]/', /unspecified/],
    ['https://[fe80::1%25eth0]/', /link-local|not a URL/],
    ['https://[fe80::abcd]/', /link-local/],
    ['https://[fc00::1]/', /unique-local/],
    ['https://[fdff:ffff::1]/', /unique-local/],
    ['https://[ff02::1]/', /multicast/],
    ['https://[::ffff:127.0.0.1]/', /IPv4-mapped form of 127\.0\.0\.1\) is a loopback/],
    ['https://[::ffff:a9fe:a9fe]/', /IPv4-mapped form of 169\.254\.169\.254/],
    ['https://[::10.0.0.1]/', /IPv4-compatible form of 10\.0\.0\.1/],
    ['https://[64:ff9b::c0a8:1]/', /NAT64 form of 192\.168\.0\.1/],
    ['https://[2002:7f00:1::]/', /6to4 form of 127\.0\.0\.1/],
    ['https://localhost/', /loopback name/],
    ['https://api.localhost/', /loopback name/],
    ['https://internal.example.com/', /internal\.example\.com resolves to 10\.1\.2\.3 is a private address/],
    ['https://metadata.example.com/latest', /link-local/],
    ['https://mixed.example.com/', /192\.168\.0\.10 is a private/],
    ['https://v6-loopback.example.com/', /loopback/],
    ['https://mapped.example.com/', /IPv4-mapped/],
    ['https://unknown.example.com/', /could not be resolved \(ENOTFOUND\)/],
    ['https://empty.example.com/', /has no address/],
    ['http://hooks.example.com/', /only https:\/\//],
    ['ftp://hooks.example.com/', /only https:\/\//],
    ['https://user:secret@hooks.example.com/', /user name or password/],
    ['not a url', /is not a URL/],
  ])('%s', async (url, reason) => {
    const result = await verdict(url);
    expect(result.ok).toBe(false);
    expect((result as { reason: string }).reason).toMatch(reason);
  });
});

describe('allowed addresses', () => {
  it.each([
    ['https://93.184.215.14/hook', '93.184.215.14'],
    ['https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    ['https://hooks.example.com/csr?x=1', '93.184.215.14'],
    ['https://[::8.8.8.8]/', '::808:808'],
  ])('%s connects to %s', async (url, address) => {
    expect(await verdict(url)).toMatchObject({ ok: true, address });
  });

  it('WEBHOOK_ALLOW_PRIVATE_TARGETS lifts the address rule, not the https rule', async () => {
    expect(await verdict('https://127.0.0.1:8443/', true)).toEqual({ ok: true, address: '127.0.0.1', family: 4 });
    expect(await verdict('https://internal.example.com/', true)).toMatchObject({ ok: true, address: '10.1.2.3' });
    expect(await verdict('http://127.0.0.1/', true)).toMatchObject({ ok: false });
  });
});

describe('parseIpv6 and checkIp', () => {
  it('parses compressed, full and dotted forms to 16 bytes; refuses malformed ones', () => {
    expect(parseIpv6('::1')).toEqual([...Array(15).fill(0), 1]);
    expect(parseIpv6('1:2:3:4:5:6:7:8')).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]);
    expect(parseIpv6('::ffff:1.2.3.4')!.slice(10)).toEqual([0xff, 0xff, 1, 2, 3, 4]);
    for (const bad of ['1::2::3', '1:2:3:4:5:6:7:8:9', '12345::', 'g::1', '1:2:3:4:5:6:7']) expect(parseIpv6(bad)).toBeNull();
  });

  it('refuses what it cannot parse', () => {
    expect(checkIp('not-an-ip')).toEqual({ allowed: false, reason: 'not-an-ip is not an IP address' });
    expect(checkIp('8.8.8.8')).toEqual({ allowed: true });
  });
});
