import type { LookupFunction } from 'node:net';
import { Agent, request } from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';
import { checkWebhookUrl, resolveTarget } from './addressPolicy.js';
import type { SendResult } from './policy.js';

/**
 * Sends one webhook request over HTTPS. The address policy is applied before every send, and the
 * connection goes to the very address that was checked (the lookup is pinned to it), so a DNS
 * answer that changes between check and connect cannot reach a private network. Redirects are
 * never followed; no answer within the timeout is a failure, and no socket outlives its exchange.
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

/** How long an idle keep-alive socket is kept for the next delivery to the same receiver. */
const IDLE_SOCKET_MS = 30_000;

export function createHttpsSender(options: HttpsSenderOptions): WebhookSender {
  // Keep-alive: most sends go to a few receivers, and a TLS handshake per delivery would cap throughput.
  // No socket limit here: the delivery loop bounds concurrency per webhook, and a pool shared by
  // webhooks on one host would let a receiver that never answers starve the others.
  const agent = new Agent({
    keepAlive: true,
    maxSockets: Infinity,
    // Idle pooled sockets close after this (the agent destroys a free socket on its timeout).
    timeout: IDLE_SOCKET_MS,
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

/** Of a receiver's answer only the status counts; this much of its body is read, the rest cut off. */
export const MAX_ANSWER_BODY_BYTES = 64 * 1024;

/**
 * One exchange, bounded as a whole by `timeoutMs` (connect, TLS, headers and body). The status
 * decides the result (spec 6.3: a 2xx within the timeout); the body is read only so that a socket
 * whose answer ended cleanly can go back to the keep-alive pool. Any other ending (timeout, error,
 * a body past the limit or still running at the deadline) destroys the socket, so a receiver can
 * never hold one open.
 */
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
    let answer: SendResult | null = null;
    const finish = (result: SendResult, keepSocket = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!keepSocket) req.destroy();
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
        const status = res.statusCode ?? 0;
        answer = resultOf(status);
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BODY_BYTES) finish(answer!);
        });
        res.on('end', () => finish(answer!, true));
        res.on('error', () => finish(answer!));
        res.on('aborted', () => finish(answer!));
      },
    );
    // At the deadline an answer whose status came in time stands; its unfinished body is cut off.
    const timer = setTimeout(() => finish(answer ?? { ok: false, status: null, error: `no answer within ${timeoutMs} ms` }), timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => finish(answer ?? { ok: false, status: null, error: describe(error) }));
    req.end(body);
  });
}

function resultOf(status: number): SendResult {
  if (status >= 200 && status < 300) return { ok: true, status };
  if (status >= 300 && status < 400) return { ok: false, status, error: `redirect (${status}) not followed` };
  return { ok: false, status, error: `receiver answered ${status}` };
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
