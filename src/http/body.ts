import type { IncomingMessage } from 'node:http';
import type { HttpBindings } from '@hono/node-server';
import type { Context, MiddlewareHandler } from 'hono';
import { PayloadTooLarge, ValidationFailed } from '../core/errors.js';
import { parseJsonBody } from './jsonParser.js';

/**
 * Request bodies: JSON within MAX_BODY_BYTES, at most MAX_DEPTH levels deep and MAX_BODY_VALUES
 * values (`jsonCost.ts`). The limits are documented in the README.
 */

export const MAX_BODY_BYTES = 5 * 1024 * 1024;
export { MAX_BODY_VALUES, MAX_DEPTH } from './jsonCost.js';

const tooLarge = () => new PayloadTooLarge(`the request body is larger than ${MAX_BODY_BYTES} bytes`);

/** Refuses a body announced larger than the limit before anything else runs; readJsonBody enforces it while reading. */
export function bodySizeLimit(): MiddlewareHandler {
  return async (c, next) => {
    const length = Number(c.req.header('Content-Length') ?? 0);
    if (length > MAX_BODY_BYTES) throw tooLarge();
    await next();
  };
}

/** The body as JSON: invalid, too deep or too many values is 422/413 (`jsonCost.ts`); a large one is parsed off the event loop (`jsonParser.ts`). */
export async function readJsonBody(c: Context): Promise<unknown> {
  return parseJsonBody(await readBodyText(c));
}

/**
 * Under @hono/node-server the body is read from Node's own stream: going through the fetch
 * Request (an AbortSignal, a web stream wrapping the Node one) cost a POST about a tenth of its
 * time. Elsewhere (app.request) through the Request.
 */
export function readBodyText(c: Context): Promise<string> {
  // Read once per request: the Idempotency-Key check digests the body before the route parses it.
  let text = bodies.get(c);
  if (!text) {
    text = readBodyTextOnce(c);
    bodies.set(c, text);
  }
  return text;
}

const bodies = new WeakMap<Context, Promise<string>>();

async function readBodyTextOnce(c: Context): Promise<string> {
  const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
  if (!incoming || incoming.readableEnded || incoming.readableDidRead) {
    const text = await c.req.text();
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw tooLarge();
    return text;
  }
  return readLimited(incoming);
}

function readLimited(incoming: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        incoming.off('data', onData);
        incoming.resume(); // drain the rest so the connection stays usable
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    incoming.on('data', onData);
    incoming.once('end', () => resolve(Buffer.concat(chunks, size).toString('utf8')));
    incoming.once('error', reject);
    // A client that goes away mid-body: without this the request would wait for ever, and hold
    // its share of the body budget (bodyBudget.ts) with it.
    incoming.once('close', () => {
      if (!incoming.readableEnded) reject(new ValidationFailed('the request body ended before its announced length'));
    });
  });
}
