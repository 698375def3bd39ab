import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { Document } from './layout.js';

/** A refusal as a small page of its own: what happened and what to do; never a stack. */
export function refusal(c: Context, status: number, title: string, message: string): Response | Promise<Response> {
  return c.html(
    <Document title={title}>
      <main>
        <h1>{title}</h1>
        <p role="alert">{message}</p>
        <p>
          <a href="/setup">Back to Setup</a>
        </p>
      </main>
    </Document>,
    status as ContentfulStatusCode,
  );
}
