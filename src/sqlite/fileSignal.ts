import cluster, { type Worker } from 'node:cluster';
import { resolve } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { doorbell, ring } from '../core/doorbells.js';

/**
 * "This store file changed" (the log grew, a projection's checkpoint moved) for every other opener
 * of the file nearby. The projector and the dispatcher run in worker threads beside the API (see
 * `backgroundRole`), and with API_PROCESSES in the primary process beside the API processes:
 * without this, each side would learn of the other's commits only by polling the file, a
 * millisecond or two on the path of every write. Threads of one process hear each other through a
 * doorbell (src/core/doorbells.ts); the main threads of a node:cluster's processes through its IPC
 * channel, which the primary relays, and each rings its own threads' bell. Other processes (the
 * `csr` tool, deployments split by ROLES) are still reached by those polls.
 *
 * It says only that something has been committed, never what: receivers look at the file as a
 * poll would, and a signal they did not need costs them that look.
 */
export interface FileSignal {
  /** Tells the other openers of the file; never the caller itself. */
  changed(): void;
  close(): void;
}

/** An in-memory database is private to its connection: nobody else can have news of it. */
const NO_SIGNAL: FileSignal = { changed: () => undefined, close: () => undefined };

export function fileSignal(kind: string, path: string, onChange: () => void): FileSignal {
  if (path === ':memory:') return NO_SIGNAL;
  const name = `csr:${kind}:${resolve(path)}`;
  const bell = doorbell(name, onChange);
  if (isMainThread) listenToCluster();
  return {
    changed() {
      bell.ring();
      if (isMainThread) tellCluster({ fileSignal: name });
    },
    close() {
      bell.close();
    },
  };
}

interface ClusterNews {
  fileSignal: string;
}

function isClusterNews(message: unknown): message is ClusterNews {
  return typeof message === 'object' && message !== null && typeof (message as Partial<ClusterNews>).fileSignal === 'string';
}

let listening = false;

/** News from another process of the cluster rings the bell here, for every thread of this one. */
function listenToCluster(): void {
  if (listening) return;
  listening = true;
  if (cluster.isWorker) {
    process.on('message', (message: unknown) => isClusterNews(message) && ring(message.fileSignal));
  } else {
    cluster.on('message', (from: Worker, message: unknown) => {
      if (!isClusterNews(message)) return;
      ring(message.fileSignal);
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
