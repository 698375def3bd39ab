import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

/**
 * A real HTTPS webhook receiver on loopback, with a self-signed certificate (test/fixtures) that
 * the service trusts through WEBHOOK_CA_FILE. Each path answers as told: a status, a redirect, or
 * never. Every request is kept with its exact raw body.
 */

export const RECEIVER_CA_FILE = fileURLToPath(new URL('../fixtures/receiver-cert.pem', import.meta.url));
const KEY_FILE = fileURLToPath(new URL('../fixtures/receiver-key.pem', import.meta.url));

export interface ReceivedRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: string;
  body: any;
  receivedAt: number;
}

/** 'hang': never answer (the sender's timeout must fire). */
export type Answer = number | { redirect: string } | 'hang';

/** How long `waitFor` waits unless told: far above what a slow or busy machine needs, and below a test's 30 s. */
const WAIT_MS = 20_000;

export interface Receiver {
  /** https://127.0.0.1:<port> */
  origin: string;
  requests: ReceivedRequest[];
  /** A function may answer later: the request is held open until its promise settles. */
  on(path: string, answer: Answer | ((request: ReceivedRequest) => Answer | Promise<Answer>)): void;
  received(path: string): ReceivedRequest[];
  /** Resolves once `predicate` holds for the requests to `path` (polls every 20 ms; fails after 20 s unless told). */
  waitFor(path: string, predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const answers = new Map<string, Answer | ((request: ReceivedRequest) => Answer | Promise<Answer>)>();
  const requests: ReceivedRequest[] = [];
  const server: Server = createServer({ cert: readFileSync(RECEIVER_CA_FILE), key: readFileSync(KEY_FILE) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = null;
      }
      const path = req.url ?? '/';
      const request: ReceivedRequest = { path, headers: req.headers, rawBody, body, receivedAt: Date.now() };
      requests.push(request);
      const configured = answers.get(path) ?? 204;
      void Promise.resolve(typeof configured === 'function' ? configured(request) : configured).then((answer) => {
        if (answer === 'hang' || res.destroyed) return;
        if (typeof answer === 'object') {
          res.writeHead(302, { Location: answer.redirect }).end();
          return;
        }
        res.writeHead(answer).end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const received = (path: string) => requests.filter((request) => request.path === path);
  return {
    origin: `https://127.0.0.1:${port}`,
    requests,
    on(path, answer) {
      answers.set(path, answer);
    },
    received,
    async waitFor(path, predicate, timeoutMs = WAIT_MS) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(received(path))) {
        if (Date.now() > deadline) throw new Error(`receiver: condition on ${path} not met within ${timeoutMs} ms (${received(path).length} requests)`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return received(path);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
