import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from 'pino';
import { AppError, Overloaded } from '../core/errors.js';
import type { RequestLog } from './requestLog.js';

/** The one place where errors become the spec's Error body: { error: { status, message } }. */

export function errorBody(status: number, message: string): { error: { status: number; message: string } } {
  return { error: { status, message } };
}

export function errorResponse(c: Context, status: number, message: string): Response {
  return c.json(errorBody(status, message), status as ContentfulStatusCode);
}

export function handleError(error: unknown, c: Context, logger: Logger): Response {
  if (error instanceof AppError) {
    if (error.status === 401) c.header('WWW-Authenticate', 'Bearer');
    if (error instanceof Overloaded) c.header('Retry-After', String(error.retryAfterSeconds));
    if (error instanceof Overloaded && error.bodyUnread) c.header('Connection', 'close');
    return errorResponse(c, error.status, error.message);
  }
  const log = (c.get('log') as RequestLog | undefined)?.logger ?? logger;
  log.error({ err: error }, 'unexpected error');
  return errorResponse(c, 500, 'internal error; the change, if any, was not acknowledged');
}
