import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from 'pino';
import { AppError, MethodNotAllowed, Overloaded, PreconditionFailed, TooManyRequests } from '../core/errors.js';
import type { RequestLog } from './requestLog.js';

/** The one place where errors become the spec's Error body: { error: { status, message } }. */

export function errorBody(status: number, message: string): { error: { status: number; message: string } } {
  return { error: { status, message } };
}

export function errorResponse(c: Context, status: number, message: string): Response {
  return c.json(errorBody(status, message), status as ContentfulStatusCode);
}

/** The handler of a path's other methods: 405 with the Allow header (spec 4.6), never 'no such path'. */
export function notAllowed(allowed: string): (c: Context) => never {
  return (c) => {
    c.header('Allow', allowed);
    throw new MethodNotAllowed(`${c.req.method} is not allowed on this path (allowed: ${allowed})`);
  };
}

export function handleError(error: unknown, c: Context, logger: Logger): Response {
  if (error instanceof AppError) {
    if (error.status === 401) c.header('WWW-Authenticate', 'Bearer');
    if (error instanceof Overloaded) c.header('Retry-After', String(error.retryAfterSeconds));
    if (error instanceof Overloaded && error.bodyUnread) c.header('Connection', 'close');
    if (error instanceof PreconditionFailed) c.header('ETag', error.etag);
    if (error instanceof TooManyRequests) c.header('Retry-After', String(error.retryAfterSeconds));
  }
  const { status, message } = describeError(error, c, logger);
  return errorResponse(c, status, message);
}

/** An error's status and message as said to the caller (the Setup page renders them as HTML); an unexpected one is logged. */
export function describeError(error: unknown, c: Context, logger: Logger): { status: number; message: string } {
  if (error instanceof AppError) return { status: error.status, message: error.message };
  const log = (c.get('log') as RequestLog | undefined)?.logger ?? logger;
  log.error({ err: error }, 'unexpected error');
  return { status: 500, message: 'internal error; the change, if any, was not acknowledged' };
}
