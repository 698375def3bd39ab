/**
 * Typed errors thrown by the core. They carry no HTTP knowledge except their status,
 * and are turned into the spec's Error body in exactly one place (src/http/errors.ts).
 */
export abstract class AppError extends Error {
  abstract readonly status: number;
}

export class Unauthorized extends AppError {
  readonly status = 401;
}

export class Forbidden extends AppError {
  readonly status = 403;
}

export class NotFound extends AppError {
  readonly status = 404;
}

export class MethodNotAllowed extends AppError {
  readonly status = 405;
}

export class PayloadTooLarge extends AppError {
  readonly status = 413;
}

export class ValidationFailed extends AppError {
  readonly status = 422;
}

export class Unavailable extends AppError {
  readonly status = 503;
}

/** What a client reads when a conflict outlasts the service's own retries (PRODUCT.md). */
export const CONFLICT_MESSAGE = 'the record changed while saving; retry';

/**
 * Optimistic concurrency failure: the stream is not at the expected revision.
 * Callers retry the whole command (load, decide, append), never the append alone. The stream
 * and revisions are kept for logs and callers; the message never names them, as it may reach a client.
 */
export class Conflict extends AppError {
  readonly status = 409;
  constructor(
    readonly stream: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(CONFLICT_MESSAGE);
  }
}
