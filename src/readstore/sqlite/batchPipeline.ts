import { Worker } from 'node:worker_threads';
import type { Position } from '../../eventstore/position.js';
import { fileThreadFits } from '../../sqlite/fileThread.js';
import type { LinkEdge, ReadTransaction, RecordDocument } from '../port.js';
import { IdFilter } from './idFilter.js';

/**
 * A rebuild's batches of a generation being built, written on a thread of their own: while the
 * thread commits one batch (documents, link edges, checkpoint, in one transaction of its own
 * connection), the calling thread reads the log and applies the projection for the next one. On
 * a second idle core a batch then costs about its apply, not its apply and its writes.
 *
 * What the calling thread reads during a batch: first the batch's own writes, then those of the
 * batch still on the thread (at most one), then the committed generation. The generation's
 * records are known to an IdFilter, so that a record no batch has written (most look-ups from an
 * empty generation) is not looked up at all. A builder is the only writer of its generation
 * (beginGeneration), so what this process sent and what the table held at the start are all.
 *
 * Killed at any moment, a batch on the thread is as uncommitted as one on the calling thread: the
 * checkpoint commits with its documents. A batch that fails there (a rebuild superseded) fails the
 * next transaction, promotion or close of the store.
 *
 * A transaction that finds by value (findAll) needs everything written first: it is run again as
 * an ordinary transaction once the thread has committed what it had, and the generation's later
 * batches stay ordinary. With one core, for an in-memory file, or when the sources run
 * untranslated (tests: no compiled thread script), every batch is ordinary.
 */

export interface ThreadData {
  path: string;
}

export interface ThreadOp {
  put?: RecordDocument;
  delete?: [workspaceId: string, object: string, id: string];
}

export interface ThreadBatch {
  seq: number;
  generation: number;
  ops: ThreadOp[];
  links: LinkEdge[];
  checkpoint: [projection: string, position: Position] | null;
}

export interface ThreadReply {
  seq: number;
  error?: string;
}

const SCRIPT = new URL('./batchThread.js', import.meta.url);

export function batchThreadFits(path: string, cores?: number): boolean {
  return fileThreadFits(SCRIPT, path, cores);
}

export const recordKey = (workspaceId: string, object: string, id: string) => `${workspaceId}\u0000${object}\u0000${id}`;

/** A findAll in a pipelined batch: the caller runs the batch again as an ordinary transaction. */
export class NeedsOrdinaryTransaction extends Error {}

export interface PipelineStore {
  /** The committed document of the generation, on the calling thread's connection. */
  committed(generation: number, workspaceId: string, object: string, id: string): RecordDocument | null;
  /** Every record key the generation holds now. */
  keys(generation: number): Iterable<string>;
  /** Throws unless `generation` is still the one being built. */
  assertBuilding(generation: number): void;
}

interface InFlight {
  seq: number;
  changed: Map<string, RecordDocument | null>;
  done: Promise<void>;
}

export class BatchPipeline {
  private worker: Worker | null = null;
  private readonly replies = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  private inFlight: InFlight[] = [];
  private seq = 0;
  private failure: Error | null = null;
  private known: { generation: number; filter: IdFilter } | null = null;
  /** Generations whose batches are ordinary transactions from now on (one found by value). */
  private readonly ordinary = new Set<number>();

  constructor(
    private readonly path: string,
    private readonly store: PipelineStore,
  ) {}

  /** Whether batches of `generation` go to the thread. */
  takes(generation: number): boolean {
    return !this.ordinary.has(generation);
  }

  /** After NeedsOrdinaryTransaction: the generation's batches run on the calling thread, once the thread has committed. */
  async toOrdinary(generation: number): Promise<void> {
    this.ordinary.add(generation);
    await this.settled();
  }

  /** Resolves when every batch sent has committed; rejects (once) with the first that failed. */
  async settled(): Promise<void> {
    await Promise.allSettled(this.inFlight.map((batch) => batch.done));
    this.throwFailure();
  }

  private throwFailure(): void {
    const failure = this.failure;
    if (failure) {
      this.failure = null;
      throw failure;
    }
  }

  /** `fn` over a transaction whose writes are sent to the thread when it returns (resolves once sent). */
  async transaction<T>(generation: number, fn: (tx: ReadTransaction) => Promise<T>): Promise<T> {
    // At most one batch on the thread while this one is computed: memory stays that of two batches.
    while (this.inFlight.length > 1) await this.inFlight[0]!.done.catch(() => undefined);
    this.throwFailure();
    this.store.assertBuilding(generation);
    const known = this.knownOf(generation);
    const changed = new Map<string, RecordDocument | null>();
    const ops: ThreadOp[] = [];
    const links: LinkEdge[] = [];
    let checkpoint: [string, Position] | null = null;
    let open = true;
    const live = () => {
      if (!open) throw new Error('this read transaction has already ended');
    };
    const lookUp = (workspaceId: string, object: string, id: string): RecordDocument | null => {
      const key = recordKey(workspaceId, object, id);
      if (changed.has(key)) return changed.get(key)!;
      for (let i = this.inFlight.length - 1; i >= 0; i--) {
        const flying = this.inFlight[i]!.changed;
        if (flying.has(key)) return flying.get(key)!;
      }
      if (!known.mayHold(key)) return null;
      return this.store.committed(generation, workspaceId, object, id);
    };
    const put = (document: RecordDocument) => {
      const key = recordKey(document.workspaceId, document.object, document.id);
      changed.set(key, document);
      known.add(key);
      ops.push({ put: document });
    };
    const tx: ReadTransaction = {
      get: async (workspaceId, object, id) => (live(), lookUp(workspaceId, object, id)),
      findAll: async () => {
        throw new NeedsOrdinaryTransaction('a pipelined batch cannot find by value');
      },
      put: async (document) => (live(), put(document)),
      putMany: async (documents) => {
        live();
        for (const document of documents) put(document);
      },
      addLinks: async (edges) => {
        live();
        links.push(...edges);
      },
      delete: async (workspaceId, object, id) => {
        live();
        changed.set(recordKey(workspaceId, object, id), null);
        ops.push({ delete: [workspaceId, object, id] });
      },
      checkpoint: async () => {
        live();
        throw new NeedsOrdinaryTransaction('a pipelined batch reads no checkpoint');
      },
      setCheckpoint: async (projection, position) => {
        live();
        checkpoint = [projection, position];
      },
    };
    let result: T;
    try {
      result = await fn(tx);
    } finally {
      open = false;
    }
    if (ops.length > 0 || links.length > 0 || checkpoint !== null) this.send({ seq: ++this.seq, generation, ops, links, checkpoint }, changed);
    return result;
  }

  private knownOf(generation: number): IdFilter {
    if (this.known?.generation !== generation) {
      const filter = new IdFilter();
      for (const key of this.store.keys(generation)) filter.add(key);
      this.known = { generation, filter };
    }
    return this.known.filter;
  }

  private send(batch: ThreadBatch, changed: Map<string, RecordDocument | null>): void {
    const worker = this.thread();
    const done = new Promise<void>((resolve, reject) => this.replies.set(batch.seq, { resolve, reject }));
    const flying: InFlight = { seq: batch.seq, changed, done };
    this.inFlight.push(flying);
    // The thread keeps the process alive while it has a batch to commit, not while it idles.
    worker.ref();
    done.then(
      () => this.landed(flying),
      (error: Error) => {
        this.failure ??= error;
        // What the generation holds is no longer known: read it again before the next batch.
        this.known = null;
        this.landed(flying);
      },
    );
    worker.postMessage(batch);
  }

  private landed(batch: InFlight): void {
    this.inFlight = this.inFlight.filter((flying) => flying !== batch);
    if (this.inFlight.length === 0) this.worker?.unref();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(SCRIPT, { workerData: { path: this.path } satisfies ThreadData });
    worker.on('message', (reply: ThreadReply) => {
      const waiting = this.replies.get(reply.seq);
      this.replies.delete(reply.seq);
      if (reply.error === undefined) waiting?.resolve();
      else waiting?.reject(new Error(reply.error));
    });
    const stopped = (error: Error) => {
      this.worker = null;
      for (const waiting of this.replies.values()) waiting.reject(error);
      this.replies.clear();
    };
    worker.once('error', stopped);
    worker.once('exit', (code) => stopped(new Error(`the rebuild's write thread stopped (exit code ${code})`)));
    this.worker = worker;
    return worker;
  }

  /**
   * Waits for the batches sent, then ends the thread. A batch that failed there is not thrown: it
   * did not commit, and its rebuild, stopped before its promotion, resumes from its checkpoint.
   */
  async close(): Promise<void> {
    await Promise.allSettled(this.inFlight.map((batch) => batch.done));
    const worker = this.worker;
    if (worker) {
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.ref();
      worker.postMessage('close');
      await exited;
    }
  }
}
