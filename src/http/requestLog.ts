import type { Logger } from 'pino';

/**
 * A request's log context. The pino child logger is built only when something is logged: at the
 * usual levels most requests log nothing, and a child per request (plus one per auth) was a
 * measurable share of a GET.
 */
export class RequestLog {
  private child: Logger | undefined;

  /** Fields bound after the request id, merged only when a line is logged. */
  private bindings: Record<string, unknown>[] | undefined;

  constructor(
    private readonly root: Logger,
    private readonly requestId: string,
  ) {}

  /** Adds fields to every later line of this request (merged only when a line is logged); `fields` is not copied. */
  bind(fields: Record<string, unknown>): void {
    (this.bindings ??= []).push(fields);
    this.child = undefined;
  }

  get logger(): Logger {
    return (this.child ??= this.root.child(Object.assign({ requestId: this.requestId }, ...(this.bindings ?? []))));
  }
}
