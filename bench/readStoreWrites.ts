import { pathToFileURL } from 'node:url';
import { client, openCheckoutStore } from './readStoreCost.js';

/**
 * The child of readStoreInstructions.ts: `node dist/bench/readStoreWrites.js <checkout> <store
 * file> <first> <count>` writes `count` created clients (readStoreCost.ts's, from number `first`)
 * into the read store file with that checkout's embedded read store, as the projector does: each
 * looked up, then put, BATCH per transaction with the checkpoint. Nothing else runs, so what the
 * process executes beyond a run with a count of 0 is the writes.
 */

const BATCH = 25;

export async function writeClients(checkout: string, path: string, first: number, count: number): Promise<void> {
  const store = await openCheckoutStore(checkout, path);
  try {
    for (let done = 0; done < count; done += BATCH) {
      const documents = Array.from({ length: Math.min(BATCH, count - done) }, (_, i) => client(first + done + i));
      await store.transaction(async (tx) => {
        for (const document of documents) {
          await tx.get(document.workspaceId, document.object, document.id);
          await tx.put(document);
        }
        await tx.setCheckpoint('records', documents.at(-1)!.createdPosition);
      });
    }
  } finally {
    await store.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [checkout, path, first, count] = process.argv.slice(2);
  await writeClients(checkout!, path!, Number(first), Number(count));
}
