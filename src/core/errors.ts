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

/** A change-feed cursor the service cannot serve (docs/sync-clients.md): the client starts over. */
export class Gone extends AppError {
  readonly status = 410;
}

/** An If-Match that names a revision the record has moved on from; `etag` is its current ETag. */
export class PreconditionFailed extends AppError {
  readonly status = 412;
  constructor(
    message: string,
    readonly etag: string,
  ) {
    super(message);
  }
}

/** The API key's rate limit is spent; it may try again after `retryAfterSeconds`. */
export class TooManyRequests extends AppError {
  readonly status = 429;
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

export class ValidationFailed extends AppError {
  readonly status = 422;
}

export class Unavailable extends AppError {
  readonly status = 503;
}

/** Too much asked at once: the client should try again after `retryAfterSeconds`. */
export class Overloaded extends AppError {
  readonly status = 503;
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    /** The request's body is left unread: the connection closes after the answer instead of reading it only to drop it. */
    readonly bodyUnread = false,
  ) {
    super(message);
  }
}

/** The disk of a store is full: nothing was written; the same write succeeds once space is freed. */
export class InsufficientStorage extends AppError {
  readonly status = 507;
  constructor(message = 'the service has no storage space left; nothing was saved. Retry once the operator has freed space') {
    super(message);
  }
}

/** The same request (same Idempotency-Key) is being run right now by another call. */
export class RequestInProgress extends AppError {
  readonly status = 409;
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
