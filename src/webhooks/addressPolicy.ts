import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The SSRF guard of webhooks (spec 6.1): only https://, and never an address inside a private,
 * local or internal network, whether written as an IP (in any of its spellings) or reached
 * through DNS. The WHATWG URL parser already turns `https://2130706433/`, `https://0x7f.1/`
 * and `https://0177.0.0.1/` into 127.0.0.1, so the checks only ever see canonical addresses.
 * The ranges are ipaddr.js's named special ranges, not a table kept here.
 */

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

/**
 * Deny by default: only ipaddr.js's `unicast` (no special range) is allowed, so a range it learns
 * in a new version is refused without a change here. The names below only word the refusal.
 */
const RANGE_KINDS: Record<string, string> = {
  unspecified: 'an unspecified ("this network") address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT (CGNAT) address',
  private: 'a private address',
  reserved: 'a reserved address (IETF protocol assignments, documentation, benchmarking, relays or future use)',
  as112: 'an AS112 DNS sink address',
  as112v6: 'an AS112 DNS sink address',
  amt: 'an AMT relay address',
  uniqueLocal: 'a unique-local address',
  deprecatedSiteLocal: 'a site-local address',
  discard: 'a discard-only address',
  benchmarking: 'a benchmarking address',
  teredo: 'a Teredo tunnel address (it reaches an IPv4 host through a relay)',
  rfc6052: 'a local-use NAT64 address (it may embed any IPv4 address)',
  deprecatedOrchid: 'an ORCHID address',
  orchid2: 'an ORCHID address',
  droneRemoteIdProtocolEntityTags: 'a drone remote ID address',
  segmentRouting: 'a segment routing address',
};

const kindOf = (range: string) => RANGE_KINDS[range] ?? `an address of the special range "${range}"`;

/**
 * IPv6 forms that carry an IPv4 address: the OS or a translator on the path delivers them to that
 * IPv4 address, so they are judged by it (otherwise [::ffff:127.0.0.1] walks past the IPv4 rules).
 * `offset` is where the IPv4 address starts, in bytes. IPv4-compatible (::/96, deprecated) has no
 * ipaddr.js name (it calls it unicast), hence its CIDR.
 */
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96');
const embeddings: { form: string; offset: number; holds: (address: ipaddr.IPv6, range: string) => boolean }[] = [
  { form: 'IPv4-mapped', offset: 12, holds: (_, range) => range === 'ipv4Mapped' },
  { form: 'IPv4-translated', offset: 12, holds: (_, range) => range === 'rfc6145' },
  { form: 'NAT64', offset: 12, holds: (address, range) => range === 'rfc6052' && address.match(NAT64_WELL_KNOWN) },
  { form: '6to4', offset: 2, holds: (_, range) => range === '6to4' },
  { form: 'IPv4-compatible', offset: 12, holds: (address, range) => range === 'unicast' && address.match(IPV4_COMPATIBLE) },
];

function checkIpv4(address: ipaddr.IPv4, shown: string): AddressVerdict {
  const range = address.range();
  return range === 'unicast' ? { allowed: true } : { allowed: false, reason: `${shown} is ${kindOf(range)}` };
}

function checkIpv6(address: ipaddr.IPv6, shown: string): AddressVerdict {
  const range = address.range();
  const embedding = embeddings.find(({ holds }) => holds(address, range));
  if (embedding) {
    const embedded = new ipaddr.IPv4(address.toByteArray().slice(embedding.offset, embedding.offset + 4));
    return checkIpv4(embedded, `${shown} (${embedding.form} form of ${embedded.toString()})`);
  }
  return range === 'unicast' ? { allowed: true } : { allowed: false, reason: `${shown} is ${kindOf(range)}` };
}

/** Whether an IP literal (no brackets) may be connected to. Anything unparsable is refused. */
export function checkIp(ip: string): AddressVerdict {
  // Node's isIP is the gate: ipaddr.js alone would take `0177.0.0.1` or `2130706433` as addresses.
  // IPv4 has no zones, so `127.0.0.1%x` is not an address at all rather than 127.0.0.1; an IPv6
  // zone (`%eth0`) picks an interface, not a host, so it never changes which range an address is in.
  if (isIP(ip) === 4) return checkIpv4(ipaddr.IPv4.parse(ip), ip);
  const unzoned = ip.split('%')[0]!;
  if (isIP(unzoned) !== 6) return { allowed: false, reason: `${ip} is not an IP address` };
  return checkIpv6(ipaddr.IPv6.parse(unzoned), ip);
}

const MAX_URL_LENGTH = 2048;

/** The syntax rule: an absolute https:// URL with a host and no credentials. */
export function checkWebhookUrl(url: string): { ok: true; url: URL } | { ok: false; reason: string } {
  if (url.length > MAX_URL_LENGTH) return { ok: false, reason: `the address is longer than ${MAX_URL_LENGTH} characters` };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: `"${url}" is not a URL` };
  }
  if (parsed.protocol !== 'https:') return { ok: false, reason: `only https:// addresses are allowed, not ${parsed.protocol}//` };
  if (parsed.username || parsed.password) return { ok: false, reason: 'the address must not contain a user name or password' };
  if (!parsed.hostname) return { ok: false, reason: 'the address has no host' };
  return { ok: true, url: parsed };
}

export interface ResolveOptions {
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: skips the address rule (local development and tests only). */
  allowPrivate: boolean;
  /** All addresses of a name; the system resolver by default. */
  lookup?: (hostname: string) => Promise<string[]>;
}

export type Target = { ok: true; address: string; family: 4 | 6 } | { ok: false; reason: string };

async function systemLookup(hostname: string): Promise<string[]> {
  return (await dnsLookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);
}

const isLocalhostName = (host: string) => /^(?:.+\.)?localhost\.?$/i.test(host);

/**
 * The address to connect to: the URL's IP, or every address its name resolves to, each checked;
 * one refused address refuses the name (it could be handed out on the next lookup). The caller
 * connects to exactly the returned address, so nothing is resolved again in between.
 */
export async function resolveTarget(url: URL, options: ResolveOptions): Promise<Target> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else if (isLocalhostName(host) && !options.allowPrivate) return { ok: false, reason: `${host} is a loopback name` };
  else {
    try {
      addresses = await (options.lookup ?? systemLookup)(host);
    } catch (error) {
      return { ok: false, reason: `${host} could not be resolved (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'})` };
    }
  }
  if (addresses.length === 0) return { ok: false, reason: `${host} has no address` };
  if (!options.allowPrivate) {
    for (const address of addresses) {
      const verdict = checkIp(address);
      if (!verdict.allowed) return { ok: false, reason: address === host ? verdict.reason : `${host} resolves to ${verdict.reason}` };
    }
  }
  const address = addresses[0]!;
  return { ok: true, address, family: isIP(address) === 6 ? 6 : 4 };
}
