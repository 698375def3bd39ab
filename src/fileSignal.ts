import { resolve } from 'node:path';
import { BroadcastChannel } from 'node:worker_threads';

/**
 * News about one embedded store file ("the log reached seq N", "projection P reached position X")
 * for every thread of this process that has the file open. The projector and the dispatcher run
 * in worker threads beside the API (see `backgroundRole`): without this, each side would learn
 * of the other's commits only by polling the file, a millisecond or two on the path of every
 * write. Other processes (the `csr` tool, API_PROCESSES) are still reached by those polls.
 *
 * A message is only ever a hint that something has been committed: receivers act on it as they
 * would on what a poll found.
 */
export interface FileSignal<T> {
  /** Tells the other openers of the file in this process; never the caller itself. */
  post(news: T): void;
  close(): void;
}

/** An in-memory database is private to its connection: nobody else can have news of it. */
const NO_SIGNAL: FileSignal<never> = { post: () => undefined, close: () => undefined };

export function fileSignal<T>(kind: string, path: string, onNews: (news: T) => void): FileSignal<T> {
  if (path === ':memory:') return NO_SIGNAL;
  const channel = new BroadcastChannel(`csr:${kind}:${resolve(path)}`);
  channel.onmessage = (message) => onNews((message as { data: T }).data);
  // Listening alone must not keep a process alive.
  channel.unref();
  return {
    post: (news) => channel.postMessage(news),
    close: () => channel.close(),
  };
}
