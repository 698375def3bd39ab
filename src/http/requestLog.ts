import type { Logger } from 'pino';

/**
 * A request's log context. The pino child logger is built only when something is logged: at the
 * usual levels most requests log nothing, and a child per request (plus one per auth) was a
 * measurable share of a GET.
 */
export class RequestLog {
  private child: Logger | undefined;

  constructor(
    private readonly root: Logger,
    private bindings: Record<string, unknown>,
  ) {}

  /** Adds fields to every later line of this request. */
  bind(fields: Record<string, unknown>): void {
    this.bindings = { ...this.bindings, ...fields };
    this.child = undefined;
  }

  get logger(): Logger {
    return (this.child ??= this.root.child(this.bindings));
  }
}
