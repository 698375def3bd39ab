import type { LookupFunction } from 'node:net';
import { Agent, request } from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';
import { checkWebhookUrl, resolveTarget } from './addressPolicy.js';
import type { SendResult } from './policy.js';

/**
 * Sends one webhook request over HTTPS. The address policy is applied before every send, and the
 * connection goes to the very address that was checked (the lookup is pinned to it), so a DNS
 * answer that changes between check and connect cannot reach a private network. Redirects are
 * never followed; no answer within the timeout is a failure.
 */

export interface HttpsSenderOptions {
  timeoutMs: number;
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: lifts the address rule (local development and tests). */
  allowPrivate: boolean;
  /** Extra trusted CA certificates (PEM), added to Node's roots. */
  extraCa?: string[];
  /** Name resolution, for tests; the system resolver by default. */
  lookup?: (hostname: string) => Promise<string[]>;
}

export interface WebhookSender {
  send(url: string, body: string, headers: Record<string, string>): Promise<SendResult>;
  close(): void;
}

export function createHttpsSender(options: HttpsSenderOptions): WebhookSender {
  // Keep-alive: most sends go to a few receivers, and a TLS handshake per delivery would cap throughput.
  // No socket limit here: the delivery loop bounds concurrency per webhook, and a pool shared by
  // webhooks on one host would let a receiver that never answers starve the others.
  const agent = new Agent({
    keepAlive: true,
    maxSockets: Infinity,
    // One context built once: passing `ca` instead would parse every root certificate per connection.
    ...(options.extraCa?.length ? { secureContext: createSecureContext({ ca: [...rootCertificates, ...options.extraCa] }) } : {}),
  });

  return {
    async send(url, body, headers) {
      const checked = checkWebhookUrl(url);
      if (!checked.ok) return { ok: false, status: null, error: `address refused: ${checked.reason}` };
      const target = await resolveTarget(checked.url, { allowPrivate: options.allowPrivate, ...(options.lookup ? { lookup: options.lookup } : {}) });
      if (!target.ok) return { ok: false, status: null, error: `address refused: ${target.reason}` };
      return post(checked.url, target, body, headers, agent, options.timeoutMs);
    },
    close() {
      agent.destroy();
    },
  };
}

/** Answers every lookup with the checked address, in the shape the caller asked for. */
function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return ((_hostname: string, lookupOptions: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (lookupOptions?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as LookupFunction;
}

function post(
  url: URL,
  target: { address: string; family: 4 | 6 },
  body: string,
  headers: Record<string, string>,
  agent: Agent,
  timeoutMs: number,
): Promise<SendResult> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        lookup: pinnedLookup(target.address, target.family),
        headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'User-Agent': 'csr-webhooks/1' },
      },
      (res) => {
        // The answer is the status; the body is read and dropped so that the connection can be reused.
        res.resume();
        res.on('error', () => undefined);
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) finish({ ok: true, status });
        else if (status >= 300 && status < 400) finish({ ok: false, status, error: `redirect (${status}) not followed` });
        else finish({ ok: false, status, error: `receiver answered ${status}` });
      },
    );
    const timer = setTimeout(() => {
      finish({ ok: false, status: null, error: `no answer within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => finish({ ok: false, status: null, error: describe(error) }));
    req.end(body);
  });
}

function describe(error: NodeJS.ErrnoException): string {
  const messages: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'connection reset by the receiver',
    ETIMEDOUT: 'connection timed out',
    DEPTH_ZERO_SELF_SIGNED_CERT: 'untrusted certificate (self-signed)',
    SELF_SIGNED_CERT_IN_CHAIN: 'untrusted certificate (self-signed in chain)',
    ERR_TLS_CERT_ALTNAME_INVALID: 'certificate does not match the host name',
  };
  return (error.code && messages[error.code]) ?? error.message;
}
