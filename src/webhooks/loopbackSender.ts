import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { WebhookSender } from './httpsSender.js';
import type { SendResult } from './policy.js';

/**
 * The transport of `csr webhooks listen --forward-to`: it posts only to this machine's loopback
 * interface, whatever name or address it is given (every resolved address must be loopback).
 * It lives in the developer's `csr` process and nowhere else; the dispatchers keep the https
 * sender and its address rule, so the listen mode opens no way around the SSRF guard.
 */

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The rule for a forward address: http:// or https:// to localhost, 127.0.0.1 or [::1], nothing else. */
export function checkForwardTo(url: string): { ok: true; url: URL } | { ok: false; reason: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: `"${url}" is not a URL` };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return { ok: false, reason: `only http:// or https:// addresses, not ${parsed.protocol}//` };
  if (parsed.username || parsed.password) return { ok: false, reason: 'the address must not contain a user name or password' };
  if (!LOOPBACK_NAMES.has(parsed.hostname)) return { ok: false, reason: `--forward-to must be on this machine (localhost, 127.0.0.1 or [::1]), not ${parsed.hostname}` };
  return { ok: true, url: parsed };
}

/** Resolves as usual, then keeps loopback addresses only (a hosts file cannot send it elsewhere). */
const loopbackLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    const loopback = addresses.filter(({ address }) => ipaddr.parse(address.split('%')[0]!).range() === 'loopback');
    if (loopback.length === 0) return callback(Object.assign(new Error(`${hostname} is not a loopback address`), { code: 'ENOTLOOPBACK' }), '', 0);
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, loopback);
    callback(null, loopback[0]!.address, loopback[0]!.family);
  });
};

export function createLoopbackSender(options: { timeoutMs: number }): WebhookSender {
  return {
    send(url, body, headers) {
      const checked = checkForwardTo(url);
      if (!checked.ok) return Promise.resolve({ ok: false, status: null, error: `address refused: ${checked.reason}` });
      return post(checked.url, body, headers, options.timeoutMs);
    },
    close() {},
  };
}

function post(url: URL, body: string, headers: Record<string, string>, timeoutMs: number): Promise<SendResult> {
  return new Promise((resolve) => {
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(
      url,
      {
        method: 'POST',
        lookup: loopbackLookup,
        timeout: timeoutMs,
        headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'User-Agent': 'csr-webhooks/1' },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        res.resume();
        if (status >= 200 && status < 300) resolve({ ok: true, status });
        else if (status >= 300 && status < 400) resolve({ ok: false, status, error: `redirect (${status}) not followed` });
        else resolve({ ok: false, status, error: `receiver answered ${status}` });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ ok: false, status: null, error: error.code === 'ECONNREFUSED' ? 'connection refused' : error.message }));
    req.end(body);
  });
}
