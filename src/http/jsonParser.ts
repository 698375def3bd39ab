import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { PayloadTooLarge, Unavailable, ValidationFailed } from '../core/errors.js';
import { parseProblem, type BodyProblem } from './jsonCost.js';

/**
 * Parses request bodies; a large one on a thread of its own. JSON.parse of a 5 MB body runs for
 * tens to hundreds of milliseconds (an array of 1.66 million `{}` for most of a second), and on
 * the event loop every other client waited that long: 16 such bodies at once held a GET of one
 * record for 500-800 ms. On the thread the event loop goes on answering; what comes back is
 * bounded (MAX_BODY_VALUES, `jsonCost.ts`), so taking it over costs little. Small bodies (almost
 * every request) are parsed in place: a hop between threads costs more than their parse.
 */

/** Bodies up to this size are parsed on the event loop (the body budget's small bodies). */
export const PARSE_IN_PLACE_BYTES = 64 * 1024;

export interface ParseRequest {
  id: number;
  text: string;
}

export type ParseReply = { id: number; value: unknown } | { id: number; problem: BodyProblem };

const SCRIPT = new URL('./jsonParserThread.js', import.meta.url);

interface Pending {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

class ParserThread {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  parse(text: string): Promise<unknown> {
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Referenced only while it has work: an idle parser keeps no process alive.
      if (this.pending.size === 1) worker.ref();
      worker.postMessage({ id, text } satisfies ParseRequest);
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(SCRIPT);
    worker.unref();
    worker.on('message', (reply: ParseReply) => {
      const waiting = this.pending.get(reply.id);
      if (!waiting) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0) worker.unref();
      if ('problem' in reply) waiting.reject(asError(reply.problem));
      else waiting.resolve(reply.value);
    });
    // A thread that dies (out of memory) fails what it was parsing; the next body starts another.
    const fail = (error: unknown) => {
      if (this.worker === worker) this.worker = null;
      for (const waiting of this.pending.values()) waiting.reject(new Unavailable('the request body could not be parsed at the moment; retry', { cause: error }));
      this.pending.clear();
    };
    worker.once('error', fail);
    worker.once('exit', (code) => fail(new Error(`the body parser thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }
}

function asError(problem: BodyProblem): Error {
  return problem.status === 413 ? new PayloadTooLarge(problem.message) : new ValidationFailed(problem.message);
}

/** The thread exists where the sources are compiled (dist/); tests that run the sources parse in place. */
const parser = existsSync(fileURLToPath(SCRIPT)) ? new ParserThread() : null;

/** The parsed body, or the 413/422 that says why it cannot be. */
export function parseJsonBody(text: string): unknown {
  if (parser && text.length > PARSE_IN_PLACE_BYTES) return parser.parse(text);
  const parsed = parseProblem(text);
  if ('problem' in parsed) throw asError(parsed.problem);
  return parsed.value;
}
