import type { Context } from 'hono';
import { ValidationFailed } from '../errors.js';

/**
 * Request bodies: JSON within MAX_BODY_BYTES (enforced before reading, see app.ts) and at most
 * MAX_DEPTH levels deep. Both limits are documented in the README.
 */

export const MAX_BODY_BYTES = 5 * 1024 * 1024;
export const MAX_DEPTH = 32;

export async function readJsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') throw new ValidationFailed('the request body is empty; send a JSON document');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    // V8 reports runaway nesting as a RangeError: still the client's malformed input.
    const reason = error instanceof RangeError ? 'it is nested too deeply' : (error as Error).message;
    throw new ValidationFailed(`the request body is not valid JSON: ${reason}`);
  }
  if (depthOf(body) > MAX_DEPTH) throw new ValidationFailed(`the request body is nested more than ${MAX_DEPTH} levels deep`);
  return body;
}

/** Iterative, so that hostile nesting cannot exhaust the stack. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_DEPTH) return deepest;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return deepest;
}
