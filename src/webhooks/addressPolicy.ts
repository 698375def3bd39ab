import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/**
 * The SSRF guard of webhooks (spec 6.1): only https://, and never an address inside a private,
 * local or internal network, whether written as an IP (in any of its spellings) or reached
 * through DNS. The WHATWG URL parser already turns `https://2130706433/`, `https://0x7f.1/`
 * and `https://0177.0.0.1/` into 127.0.0.1, so the checks only ever see canonical addresses.
 */

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

interface Range {
  bytes: number[];
  prefix: number;
  kind: string;
}

const v4 = (text: string, prefix: number, kind: string): Range => ({ bytes: text.split('.').map(Number), prefix, kind });

const IPV4_REFUSED: Range[] = [
  v4('0.0.0.0', 8, 'an unspecified ("this network") address'),
  v4('10.0.0.0', 8, 'a private address'),
  v4('100.64.0.0', 10, 'a carrier-grade NAT (CGNAT) address'),
  v4('127.0.0.0', 8, 'a loopback address'),
  v4('169.254.0.0', 16, 'a link-local address (cloud metadata lives here)'),
  v4('172.16.0.0', 12, 'a private address'),
  v4('192.0.0.0', 24, 'an IETF protocol assignment address'),
  v4('192.0.2.0', 24, 'a documentation address'),
  v4('192.168.0.0', 16, 'a private address'),
  v4('198.18.0.0', 15, 'a benchmarking address'),
  v4('198.51.100.0', 24, 'a documentation address'),
  v4('203.0.113.0', 24, 'a documentation address'),
  v4('224.0.0.0', 4, 'a multicast address'),
  v4('240.0.0.0', 4, 'a reserved or broadcast address'),
];

const v6 = (text: string, prefix: number, kind: string): Range => ({ bytes: parseIpv6(text)!, prefix, kind });

const IPV6_REFUSED: Range[] = [
  v6('::', 128, 'an unspecified address'),
  v6('::1', 128, 'a loopback address'),
  v6('fe80::', 10, 'a link-local address'),
  v6('fec0::', 10, 'a site-local address'),
  v6('fc00::', 7, 'a unique-local address'),
  v6('ff00::', 8, 'a multicast address'),
  v6('2001:db8::', 32, 'a documentation address'),
  v6('100::', 64, 'a discard-only address'),
];

/**
 * IPv6 forms that carry an IPv4 address: the OS or a translator on the path delivers them to that
 * IPv4 address, so they are judged by it (otherwise [::ffff:127.0.0.1] walks past the IPv4 rules).
 */
const IPV4_EMBEDDINGS: { range: Range; offset: number; form: string }[] = [
  { range: v6('::ffff:0:0', 96, ''), offset: 12, form: 'IPv4-mapped' },
  { range: v6('64:ff9b::', 96, ''), offset: 12, form: 'NAT64' },
  { range: v6('2002::', 16, ''), offset: 2, form: '6to4' },
  { range: v6('::', 96, ''), offset: 12, form: 'IPv4-compatible' },
];

function inRange(bytes: number[], range: Range): boolean {
  let bits = range.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i]! & mask) !== (range.bytes[i]! & mask)) return false;
  }
  return true;
}

/** Zone ids (`%eth0`) pick an interface, not a host, so they never change which range an address is in. */
function withoutZone(text: string): string {
  return text.split('%')[0]!;
}

/** 16-bit groups of one side of `::`; a dotted quad may only close the whole address. */
function parseGroups(part: string, mayEndInIpv4: boolean): number[] | null {
  if (part === '') return [];
  const pieces = part.split(':');
  const groups: number[] = [];
  for (const [index, piece] of pieces.entries()) {
    if (mayEndInIpv4 && index === pieces.length - 1 && piece.includes('.')) {
      if (isIP(piece) !== 4) return null;
      const [a, b, c, d] = piece.split('.').map(Number) as [number, number, number, number];
      groups.push((a << 8) | b, (c << 8) | d);
    } else {
      if (!/^[0-9a-f]{1,4}$/i.test(piece)) return null;
      groups.push(parseInt(piece, 16));
    }
  }
  return groups;
}

/**
 * The 16 bytes of an IPv6 address in text form (with `::`, an embedded dotted quad or a zone), or null.
 * Our own parser, because the range checks need bytes and Node only says whether text is an address.
 */
export function parseIpv6(text: string): number[] | null {
  const halves = withoutZone(text).split('::');
  if (halves.length > 2) return null;
  const compressed = halves.length === 2;
  const head = parseGroups(halves[0]!, !compressed);
  const tail = compressed ? parseGroups(halves[1]!, true) : [];
  if (!head || !tail) return null;
  const missing = 8 - head.length - tail.length;
  // `::` stands for at least one zero group; without it the groups must already number eight.
  if (compressed ? missing < 1 : missing !== 0) return null;
  const groups = [...head, ...Array<number>(missing).fill(0), ...tail];
  return groups.flatMap((group) => [group >> 8, group & 0xff]);
}

function checkIpv4Bytes(bytes: number[], shown: string): AddressVerdict {
  const refused = IPV4_REFUSED.find((range) => inRange(bytes, range));
  return refused ? { allowed: false, reason: `${shown} is ${refused.kind}` } : { allowed: true };
}

/** Whether an IP literal (no brackets) may be connected to. Anything unparsable is refused. */
export function checkIp(ip: string): AddressVerdict {
  // IPv4 has no zones, so `127.0.0.1%x` is not an address at all rather than 127.0.0.1.
  if (isIP(ip) === 4) return checkIpv4Bytes(ip.split('.').map(Number), ip);
  const bytes = isIP(withoutZone(ip)) === 6 ? parseIpv6(ip) : null;
  if (!bytes) return { allowed: false, reason: `${ip} is not an IP address` };
  const refused = IPV6_REFUSED.find((range) => inRange(bytes, range));
  if (refused) return { allowed: false, reason: `${ip} is ${refused.kind}` };
  for (const { range, offset, form } of IPV4_EMBEDDINGS) {
    if (!inRange(bytes, range)) continue;
    const embedded = bytes.slice(offset, offset + 4);
    const verdict = checkIpv4Bytes(embedded, `${ip} (${form} form of ${embedded.join('.')})`);
    if (!verdict.allowed) return verdict;
  }
  return { allowed: true };
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
