import { getEnvironmentData, setEnvironmentData, threadId } from 'node:worker_threads';

/**
 * Doorbells between the threads of one process: `ring` wakes whoever listens to that name in any
 * thread. A bell carries no news; a listener looks for itself at what changed (the log's head, a
 * checkpoint). Names share bells by hash, so a ring may also wake a listener of another name: a
 * wake is only ever a hint to look.
 *
 * Why not a BroadcastChannel, which the file signals used before: its post is a message to every
 * other port of the name, under a lock the receiving threads take too. On the commit path of every
 * write it cost more than the commit's inserts, and most of all on a busy machine, where a
 * receiver descheduled while holding the lock stalls the sender (docs/performance.md). A ring is
 * an atomic add and a notify.
 *
 * The bells live in one SharedArrayBuffer handed to every thread through the environment data
 * Node gives each new Worker: a thread made before this module was loaded in its parent (the
 * module is loaded by the thread supervisor and by the file signals, so before any role thread
 * starts) has bells of its own, and hears the others only by the polls it keeps anyway.
 */

/** In every Node.js the service runs on (V8 8.7 and later); in TypeScript's library from ES2024 on, past the one this project compiles with. */
type WaitAsync = (array: Int32Array, index: number, value: number) => { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

const KEY = 'csr:doorbells';
/** Names hash to this many bells. */
const SLOTS = 1024;
/**
 * Each bell has a cell per thread, so that a ring wakes the threads that listen and never the one
 * that rang: notifying a thread that waits costs the ringer a system call (the waiter's event loop
 * is woken through its async handle), and the woken thread a turn of its loop, on every commit.
 * Threads numbered past the last cell share it: a ring always wakes that cell, the ringer's too.
 */
const CELLS = 32;
const SHARED_CELL = CELLS - 1;

interface SharedBells {
  /** A ring count per (slot, cell), at slot * CELLS + cell. */
  cells: Int32Array;
  /** Per slot, a bit for each cell a thread listens on. */
  listening: Int32Array;
}

function sharedBells(): SharedBells {
  let shared = getEnvironmentData(KEY);
  if (!(shared instanceof SharedArrayBuffer)) {
    shared = new SharedArrayBuffer((SLOTS * CELLS + SLOTS) * Int32Array.BYTES_PER_ELEMENT);
    setEnvironmentData(KEY, shared);
  }
  const buffer = shared as SharedArrayBuffer;
  return { cells: new Int32Array(buffer, 0, SLOTS * CELLS), listening: new Int32Array(buffer, SLOTS * CELLS * Int32Array.BYTES_PER_ELEMENT, SLOTS) };
}

const { cells, listening } = sharedBells();
/** This thread's cell in every bell. */
const ownCell = Math.min(threadId, SHARED_CELL);

/** FNV-1a: names differ mostly at their ends (file paths), which it spreads as well as their starts. */
function slotOf(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % SLOTS;
}

/**
 * The cells a ring from the thread on `ringer` wakes, given the bits of those that listen: every
 * one but the ringer's own, unless the ringer's is the shared cell, which other threads wait on too.
 * `ringer` undefined: a ring on behalf of another process, which every listener hears.
 */
export function cellsToWake(listeners: number, ringer: number | undefined): number[] {
  const woken: number[] = [];
  for (let cell = 0; cell < CELLS; cell++) {
    if ((listeners & (1 << cell)) === 0) continue;
    if (cell === ringer && cell !== SHARED_CELL) continue;
    woken.push(cell);
  }
  return woken;
}

/** Wakes the cells `cellsToWake` names; returns the count the ringer's own cell had, when it was rung too. */
function wake(slot: number, ringer: number | undefined): number | undefined {
  let own: number | undefined;
  for (const cell of cellsToWake(Atomics.load(listening, slot), ringer)) {
    const before = Atomics.add(cells, slot * CELLS + cell, 1);
    Atomics.notify(cells, slot * CELLS + cell);
    if (cell === ringer) own = before;
  }
  return own;
}

interface Listener {
  heard(): void;
}

/** This thread's listeners of one bell, and the count of its cell it last answered. */
interface Bell {
  slot: number;
  index: number;
  seen: number;
  listeners: Set<Listener>;
}

const listened = new Map<number, Bell>();

async function listen(bell: Bell): Promise<void> {
  while (bell.listeners.size > 0) {
    const wait = waitAsync(cells, bell.index, bell.seen);
    if (wait.async) await wait.value;
    const now = Atomics.load(cells, bell.index);
    if (now === bell.seen || bell.listeners.size === 0) continue;
    bell.seen = now;
    for (const listener of bell.listeners) listener.heard();
  }
}

function bellOf(slot: number): Bell {
  let bell = listened.get(slot);
  if (!bell) {
    // Listening first, then the count: a ring between the two is heard by the first wait.
    Atomics.or(listening, slot, 1 << ownCell);
    const index = slot * CELLS + ownCell;
    bell = { slot, index, seen: Atomics.load(cells, index), listeners: new Set() };
    listened.set(slot, bell);
  }
  return bell;
}

/** Rings the bell of `name` for every listener in every thread of this process (news from another process). */
export function ring(name: string): void {
  wake(slotOf(name), undefined);
}

export interface Doorbell {
  /** Rings for every other listener of the name, in this thread and the others; not for this one. */
  ring(): void;
  close(): void;
}

export function doorbell(name: string, onRing: () => void): Doorbell {
  const slot = slotOf(name);
  const bell = bellOf(slot);
  const self: Listener = { heard: onRing };
  const starts = bell.listeners.size === 0;
  bell.listeners.add(self);
  if (starts) void listen(bell);
  return {
    ring() {
      const before = wake(slot, ownCell);
      // On the shared cell, unless someone else rang it meanwhile (then everyone here hears it from
      // the loop), the loop is told this ring is heard. Either way the ringer does not hear its own ring.
      if (before !== undefined) {
        if (bell.seen !== before) return;
        bell.seen = before + 1;
      }
      for (const listener of bell.listeners) if (listener !== self) queueMicrotask(() => listener.heard());
    },
    close() {
      if (!bell.listeners.delete(self) || bell.listeners.size > 0) return;
      listened.delete(slot);
      if (ownCell !== SHARED_CELL) Atomics.and(listening, slot, ~(1 << ownCell));
      // Ends this thread's wait on the bell (a shared cell's other waiters see no ring and wait again).
      Atomics.notify(cells, bell.index);
    },
  };
}
