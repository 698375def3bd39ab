import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';

/**
 * Sets a header of the answer to come, from any step of a request. Set on Node's response itself
 * when there is one, which merges it with the answer's own headers: `c.header()` gives the answer a
 * Headers object, and a GET of one record with it costs a measurable share more (docs/performance.md).
 * In process (`app.request`, the route tests) there is no Node response, and it is `c.header()`.
 */
export function answerHeader(c: Context, name: string, value: string): void {
  const outgoing = (c.env as Partial<HttpBindings> | undefined)?.outgoing;
  if (outgoing) outgoing.setHeader(name, value);
  else c.header(name, value);
}
