import type { Logger } from 'pino';

/**
 * A request's log context. The pino child logger is built only when something is logged: at the
 * usual levels most requests log nothing, and a child per request (plus one per auth) was a
 * measurable share of a GET.
 */
export class RequestLog {
  private child: Logger | undefined;

  private readonly bindings: Record<string, unknown>[];

  constructor(
    private readonly root: Logger,
    bindings: Record<string, unknown>,
  ) {
    this.bindings = [bindings];
  }

  /** Adds fields to every later line of this request (merged only when a line is logged). */
  bind(fields: Record<string, unknown>): void {
    this.bindings.push(fields);
    this.child = undefined;
  }

  get logger(): Logger {
    return (this.child ??= this.root.child(Object.assign({}, ...this.bindings)));
  }
}
