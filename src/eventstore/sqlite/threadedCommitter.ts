import { Worker } from 'node:worker_threads';
import { Unavailable } from '../../core/errors.js';
import type { AppendResult, ChainResult, StreamAppend } from '../port.js';
import { fromWire, type CommitReply, type CommitRequest, type CommitThreadData, type QueuedItem, type Settled } from './commitWire.js';

/**
 * The group commit of an API process, on a thread of its own (commitThread.ts). A commit of the
 * embedded log runs synchronously, and with synchronous=FULL its fsync waits for the disk: on
 * the calling thread, the event loop serving requests waited through every one of them. Here the
 * appends of a turn of the event loop go to the commit thread together, it commits them as the
 * group commit does on its own thread (the same transaction, savepoints, chain and checks), and
 * their promises settle once it answers. What SQLite makes visible to readers is unchanged: a WAL
 * commit with FULL is seen only after its fsync. The hop between threads is paid back where an
 * fsync takes longer than it (docs/performance.md has the figures).
 */

export const COMMIT_THREAD_SCRIPT = new URL('./commitThread.js', import.meta.url);

interface Waiting {
  resolve(settled: Settled): void;
  reject(error: unknown): void;
}

export class ThreadedCommitter {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();
  private queue: QueuedItem[] = [];
  private scheduled = false;
  private closing: Promise<void> | null = null;

  /** `committed` hears the log's head after each commit, before the appends' callers do. */
  constructor(
    private readonly path: string,
    private readonly committed: (head: number) => void,
    private readonly script: URL = COMMIT_THREAD_SCRIPT,
  ) {}

  async enqueue(append: StreamAppend): Promise<AppendResult> {
    const settled = await this.push([append], undefined);
    return settled.result!;
  }

  async enqueueChain(first: StreamAppend[], then: StreamAppend[][]): Promise<ChainResult> {
    const settled = await this.push(first, then);
    return {
      first: settled.result!,
      then: settled.then!.map((outcome) =>
        'result' in outcome ? { status: 'fulfilled', value: outcome.result } : { status: 'rejected', reason: fromWire(outcome.error) },
      ),
    };
  }

  /** Commits what is queued, then ends the thread: the last appends are written before the store closes. */
  close(): Promise<void> {
    this.closing ??= this.closeThread();
    return this.closing;
  }

  private push(first: StreamAppend[], then: StreamAppend[][] | undefined): Promise<Settled> {
    if (this.closing) return Promise.reject(new Error('the event store is closed'));
    const id = this.nextId++;
    this.queue.push(then === undefined ? { id, first } : { id, first, then });
    if (!this.scheduled) {
      this.scheduled = true;
      // The appends of every request handled in this turn of the event loop share the commit.
      setImmediate(() => this.send());
    }
    return new Promise<Settled>((resolve, reject) => {
      // The thread keeps the process alive while it holds appends, not otherwise.
      if (this.waiting.size === 0) this.worker?.ref();
      this.waiting.set(id, {
        resolve: (settled) => (settled.error === undefined ? resolve(settled) : reject(fromWire(settled.error))),
        reject,
      });
    });
  }

  private send(): void {
    this.scheduled = false;
    const appends = this.queue;
    this.queue = [];
    if (appends.length > 0) this.thread().postMessage({ appends } satisfies CommitRequest);
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.script, { workerData: { path: this.path } satisfies CommitThreadData });
    worker.on('message', (reply: CommitReply) => this.received(reply));
    // A thread that fails takes nothing committed with it: what it had not answered fails, as an
    // append fails when its commit does, and the next append starts another thread.
    const failed = (reason: string) => {
      if (this.worker !== worker) return;
      this.worker = null;
      const error = new Unavailable(`the event store's commit thread stopped (${reason}); try again`);
      for (const waiting of this.waiting.values()) waiting.reject(error);
      this.waiting.clear();
    };
    worker.on('error', (error) => failed(error.message));
    worker.on('exit', (code) => failed(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }

  private received(reply: CommitReply): void {
    if (reply.head !== undefined) this.committed(reply.head);
    for (const settled of reply.settled) {
      const waiting = this.waiting.get(settled.id);
      this.waiting.delete(settled.id);
      waiting?.resolve(settled);
    }
    if (this.waiting.size === 0) this.worker?.unref();
  }

  private async closeThread(): Promise<void> {
    this.send();
    const worker = this.worker;
    if (!worker) return;
    const closed = new Promise<void>((resolve) => {
      worker.on('message', (reply: CommitReply) => {
        if (reply.closed) resolve();
      });
      worker.once('exit', () => resolve());
    });
    worker.postMessage({ close: true } satisfies CommitRequest);
    await closed;
    this.worker = null;
    await worker.terminate();
  }
}
