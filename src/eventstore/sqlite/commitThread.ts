import { parentPort, workerData } from 'node:worker_threads';
import { openLogFile, EventLog } from './eventLog.js';
import { GroupCommitter } from './groupCommitter.js';
import { toWire, type CommitReply, type CommitRequest, type CommitThreadData, type Settled } from './commitWire.js';

/**
 * The thread that commits an API process's appends to the embedded log (threadedCommitter.ts): a
 * connection of its own and the group commit as on the calling thread, so the commit's writes,
 * hashing and fsync hold this thread, not the event loop that serves requests.
 */

const { path } = workerData as CommitThreadData;
const port = parentPort!;
const db = openLogFile(path);
const committer = new GroupCommitter(db, new EventLog(db), (head) => {
  pending.head = Math.max(pending.head ?? 0, head);
});

/** What this turn of the thread's event loop settled, sent together once it ends. */
let pending: CommitReply = { settled: [] };
let scheduled = false;

function settle(item: Settled): void {
  pending.settled.push(item);
  if (scheduled) return;
  scheduled = true;
  setImmediate(sendReplies);
}

function sendReplies(): void {
  scheduled = false;
  if (pending.settled.length === 0) return;
  const reply = pending;
  pending = { settled: [] };
  port.postMessage(reply);
}

port.on('message', (request: CommitRequest) => {
  if (request.close) {
    committer.flush(true);
    // Its appends' promises settle in microtasks, before this callback: their replies go first,
    // then the close is confirmed (one port, in order).
    setImmediate(() => {
      sendReplies();
      db.close();
      port.postMessage({ settled: [], closed: true } satisfies CommitReply);
      port.close();
    });
    return;
  }
  for (const item of request.appends) {
    if (item.then === undefined) {
      committer.enqueue(item.first[0]!).then(
        (result) => settle({ id: item.id, result }),
        (error: unknown) => settle({ id: item.id, error: toWire(error) }),
      );
    } else {
      committer.enqueueChain(item.first, item.then).then(
        ({ first, then }) =>
          settle({
            id: item.id,
            result: first,
            then: then.map((outcome) => (outcome.status === 'fulfilled' ? { result: outcome.value } : { error: toWire(outcome.reason) })),
          }),
        (error: unknown) => settle({ id: item.id, error: toWire(error) }),
      );
    }
  }
});
