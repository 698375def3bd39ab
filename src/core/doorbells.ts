import { getEnvironmentData, setEnvironmentData } from 'node:worker_threads';

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
const SLOTS = 1024;

function sharedBells(): Int32Array {
  let shared = getEnvironmentData(KEY);
  if (!(shared instanceof SharedArrayBuffer)) {
    shared = new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT);
    setEnvironmentData(KEY, shared);
  }
  return new Int32Array(shared as SharedArrayBuffer);
}

const bells = sharedBells();

/** FNV-1a: names differ mostly at their ends (file paths), which it spreads as well as their starts. */
function slotOf(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % SLOTS;
}

interface Listener {
  heard(): void;
}

/** This thread's listeners of one bell, and the count it last answered. */
interface Bell {
  slot: number;
  seen: number;
  listeners: Set<Listener>;
}

const listened = new Map<number, Bell>();

async function listen(bell: Bell): Promise<void> {
  while (bell.listeners.size > 0) {
    const wait = waitAsync(bells, bell.slot, bell.seen);
    if (wait.async) await wait.value;
    const now = Atomics.load(bells, bell.slot);
    if (now === bell.seen || bell.listeners.size === 0) continue;
    bell.seen = now;
    for (const listener of bell.listeners) listener.heard();
  }
}

function bellOf(slot: number): Bell {
  let bell = listened.get(slot);
  if (!bell) {
    bell = { slot, seen: Atomics.load(bells, slot), listeners: new Set() };
    listened.set(slot, bell);
  }
  return bell;
}

/** Rings the bell of `name` for every listener in every thread of this process. */
export function ring(name: string): void {
  Atomics.add(bells, slotOf(name), 1);
  Atomics.notify(bells, slotOf(name));
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
      const before = Atomics.add(bells, slot, 1);
      Atomics.notify(bells, slot);
      // Unless someone else rang meanwhile (then everyone here hears it from the loop), this
      // thread's other listeners hear it now, and the ringer does not hear its own ring.
      if (bell.seen !== before) return;
      bell.seen = before + 1;
      for (const listener of bell.listeners) if (listener !== self) queueMicrotask(() => listener.heard());
    },
    close() {
      if (!bell.listeners.delete(self) || bell.listeners.size > 0) return;
      listened.delete(slot);
      // Ends this thread's wait on the bell (the others' waits see no ring and wait again).
      Atomics.notify(bells, slot);
    },
  };
}
