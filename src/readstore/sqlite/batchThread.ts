import { parentPort, workerData } from 'node:worker_threads';
import type { ThreadBatch, ThreadData, ThreadReply } from './batchPipeline.js';
import { openSqliteReadStore } from './index.js';

/**
 * The thread of a rebuild's pipelined batches (batchPipeline.ts): the store's own transaction of
 * the generation being built, over a connection of its own, per batch it is sent, in order. Each
 * batch's documents, links and checkpoint commit together, as on the calling thread.
 */

const { path } = workerData as ThreadData;
const port = parentPort!;
const store = openSqliteReadStore({ path, batchThread: false });

port.on('message', (message: ThreadBatch | 'close') => {
  if (message === 'close') {
    void store.close().then(() => port.close());
    return;
  }
  const { seq, generation, ops, links, checkpoint } = message;
  store
    .transaction(
      async (tx) => {
        for (const op of ops) {
          if (op.put) await tx.put(op.put);
          else await tx.delete(...op.delete!);
        }
        if (links.length > 0) await tx.addLinks(links);
        if (checkpoint) await tx.setCheckpoint(checkpoint[0], checkpoint[1]);
      },
      { generation },
    )
    .then(
      () => port.postMessage({ seq } satisfies ThreadReply),
      (error: unknown) => port.postMessage({ seq, error: error instanceof Error ? error.message : String(error) } satisfies ThreadReply),
    );
});
