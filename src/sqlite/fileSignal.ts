import cluster, { type Worker } from 'node:cluster';
import { resolve } from 'node:path';
import { BroadcastChannel, isMainThread } from 'node:worker_threads';

/**
 * News about one embedded store file ("the log reached seq N", "projection P reached position X")
 * for every other opener of the file nearby. The projector and the dispatcher run in worker threads
 * beside the API (see `backgroundRole`), and with API_PROCESSES in the primary process beside the
 * API processes: without this, each side would learn of the other's commits only by polling the
 * file, a millisecond or two on the path of every write. Threads of one process hear each other
 * through a BroadcastChannel; the main threads of a node:cluster's processes through its IPC
 * channel, which the primary relays. Other processes (the `csr` tool, deployments split by ROLES)
 * are still reached by those polls.
 *
 * A message is only ever a hint that something has been committed: receivers act on it as they
 * would on what a poll found.
 */
export interface FileSignal<T> {
  /** Tells the other openers of the file; never the caller itself. */
  post(news: T): void;
  close(): void;
}

/** An in-memory database is private to its connection: nobody else can have news of it. */
const NO_SIGNAL: FileSignal<never> = { post: () => undefined, close: () => undefined };

export function fileSignal<T>(kind: string, path: string, onNews: (news: T) => void): FileSignal<T> {
  if (path === ':memory:') return NO_SIGNAL;
  const name = `csr:${kind}:${resolve(path)}`;
  const channel = new BroadcastChannel(name);
  channel.onmessage = (message) => onNews((message as { data: T }).data);
  // Listening alone must not keep a process alive.
  channel.unref();
  const hear = onNews as (news: unknown) => void;
  if (isMainThread) listenToCluster(name, hear);
  return {
    post(news) {
      channel.postMessage(news);
      if (isMainThread) tellCluster({ fileSignal: name, news });
    },
    close() {
      channel.close();
      if (isMainThread) listeners.get(name)?.delete(hear);
    },
  };
}

interface ClusterNews {
  fileSignal: string;
  news: unknown;
}

function isClusterNews(message: unknown): message is ClusterNews {
  return typeof message === 'object' && message !== null && typeof (message as Partial<ClusterNews>).fileSignal === 'string';
}

/** This main thread's openers, by signal name: news from another process of the cluster is for each of them. */
const listeners = new Map<string, Set<(news: unknown) => void>>();
let listening = false;

function listenToCluster(name: string, hear: (news: unknown) => void): void {
  let named = listeners.get(name);
  if (!named) listeners.set(name, (named = new Set()));
  named.add(hear);
  if (listening) return;
  listening = true;
  const deliver = (message: ClusterNews) => {
    for (const each of listeners.get(message.fileSignal) ?? []) each(message.news);
  };
  if (cluster.isWorker) {
    process.on('message', (message: unknown) => isClusterNews(message) && deliver(message));
  } else {
    cluster.on('message', (from: Worker, message: unknown) => {
      if (!isClusterNews(message)) return;
      deliver(message);
      tellCluster(message, from);
    });
  }
}

const ignore = () => undefined;

/** To the primary from an API process; from the primary to every API process but the one it came from. */
function tellCluster(message: ClusterNews, except?: Worker): void {
  if (cluster.isWorker) {
    // A process whose primary is gone is stopping (see `main`): it has nobody left to tell.
    if (process.connected) process.send!(message, undefined, undefined, ignore);
    return;
  }
  for (const worker of Object.values(cluster.workers ?? {})) {
    if (worker && worker !== except && worker.isConnected()) worker.send(message, undefined, ignore);
  }
}
