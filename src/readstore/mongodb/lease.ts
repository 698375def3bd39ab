import { MongoServerError, type Db } from 'mongodb';

/**
 * A lease in MongoDB: "exactly one active projector at a time" (issue 4, item 4).
 *
 * One document per lease in the `leases` collection: `{ _id: name, holderId, expiresAt, token }`.
 * Taking or renewing is a compare-and-set on the document as it was read, decided by the pure
 * `decideLease` below, with the *server's* clock (`hello.localTime`), so clock skew between the
 * machines of the candidates does not matter. `token` grows by one each time the lease changes hands
 * (a fencing token). The holder renews every `renewEveryMs`; when it dies, its lease expires after
 * `ttlMs` and the next candidate's attempt takes it over.
 *
 * Typical use (src/service.ts, role `projector`):
 *
 *   const keeper = keepLease(db, {
 *     name: 'projector', holderId: `${hostname()}:${process.pid}:${randomUUID()}`,
 *     onChange: (held) => (held ? startProjections() : stopProjections()),
 *   });
 *   ...
 *   await keeper.stop(); // releases the lease if held
 *
 * Projections stay safe even if two runners overlap for a moment (a paused holder that has not yet
 * noticed its expiry): their writes and checkpoint commit in one transaction, so a replay is a no-op.
 */

export const LEASES = 'leases';

export interface LeaseState {
  holderId: string;
  expiresAt: Date;
  token: number;
}

export type LeaseDecision =
  | { kind: 'acquire' | 'renew'; holderId: string; expiresAt: Date; token: number }
  | { kind: 'refuse'; holderId: string; expiresAt: Date };

/**
 * Pure: what happens when `holderId` asks for the lease at `now` (server time).
 * - nobody holds it: acquire (token 1)
 * - the asker holds it (even just expired, since nobody took it since): renew, same token
 * - someone else holds it and it has expired (expiresAt <= now): acquire, token + 1
 * - someone else holds it and it is still valid: refuse
 */
export function decideLease(current: LeaseState | null, request: { holderId: string; now: Date; ttlMs: number }): LeaseDecision {
  if (!(request.ttlMs > 0)) throw new RangeError(`lease ttl must be positive, got ${request.ttlMs}`);
  if (request.holderId === '') throw new RangeError('lease holder id must not be empty');
  const expiresAt = new Date(request.now.getTime() + request.ttlMs);
  if (current === null) return { kind: 'acquire', holderId: request.holderId, expiresAt, token: 1 };
  if (current.holderId === request.holderId) return { kind: 'renew', holderId: request.holderId, expiresAt, token: current.token };
  if (current.expiresAt.getTime() <= request.now.getTime()) {
    return { kind: 'acquire', holderId: request.holderId, expiresAt, token: current.token + 1 };
  }
  return { kind: 'refuse', holderId: current.holderId, expiresAt: current.expiresAt };
}

export interface Lease {
  name: string;
  holderId: string;
  /** Server time at which the lease lapses unless renewed. */
  expiresAt: Date;
  /** Fencing token: grows whenever the lease changes hands. */
  token: number;
}

export type LeaseResult = { held: true; lease: Lease } | { held: false; holderId: string | null; expiresAt: Date | null };

interface LeaseDoc extends LeaseState {
  _id: string;
}

async function serverNow(db: Db): Promise<Date> {
  const hello = await db.command({ hello: 1 });
  const localTime: unknown = hello.localTime;
  return localTime instanceof Date ? localTime : new Date();
}

/** Takes the lease, or renews it when `holderId` already holds it. Never waits for it. */
export async function acquireLease(db: Db, name: string, holderId: string, ttlMs: number): Promise<LeaseResult> {
  const leases = db.collection<LeaseDoc>(LEASES);
  const current = await leases.findOne({ _id: name });
  const now = await serverNow(db);
  const decision = decideLease(
    current ? { holderId: current.holderId, expiresAt: current.expiresAt, token: current.token } : null,
    { holderId, now, ttlMs },
  );
  if (decision.kind === 'refuse') return { held: false, holderId: decision.holderId, expiresAt: decision.expiresAt };
  const next = { holderId, expiresAt: decision.expiresAt, token: decision.token };
  if (current === null) {
    try {
      await leases.insertOne({ _id: name, ...next });
    } catch (error) {
      if (error instanceof MongoServerError && error.code === 11000) return lostRace(db, name);
      throw error;
    }
  } else {
    // Compare-and-set against the document as read: a concurrent take-over or renewal wins.
    const result = await leases.updateOne(
      { _id: name, holderId: current.holderId, token: current.token, expiresAt: current.expiresAt },
      { $set: next },
    );
    if (result.matchedCount === 0) return lostRace(db, name);
  }
  return { held: true, lease: { name, ...next } };
}

/** Same as acquireLease: renewing is asking again as the holder. */
export const renewLease = acquireLease;

/** Gives the lease up (only when `holderId` holds it) so that another candidate takes it at once. */
export async function releaseLease(db: Db, name: string, holderId: string): Promise<void> {
  await db.collection<LeaseDoc>(LEASES).deleteOne({ _id: name, holderId });
}

async function lostRace(db: Db, name: string): Promise<LeaseResult> {
  const winner = await db.collection<LeaseDoc>(LEASES).findOne({ _id: name });
  return { held: false, holderId: winner?.holderId ?? null, expiresAt: winner?.expiresAt ?? null };
}

export interface KeepLeaseOptions {
  name: string;
  holderId: string;
  /** How long a lease lasts without renewal (default 6 s): the take-over time after a crash. */
  ttlMs?: number;
  /** How often the holder renews and candidates try (default ttl / 4). */
  renewEveryMs?: number;
  /** Called when this process gains (true) or loses (false) the lease. */
  onChange(held: boolean, lease: Lease | null): void | Promise<void>;
  /** Told about failed attempts (pino-compatible; optional). */
  logger?: { warn(details: object, message: string): void };
}

export interface LeaseKeeper {
  readonly held: boolean;
  /** Stops trying, releases the lease if held, and reports the loss through onChange. */
  stop(): Promise<void>;
}

/**
 * Pure: whether a lease taken by a request sent at `sentAt` (local monotonic ms) is still ours at
 * `now`, counting from when the request was *sent*, so that a slow answer only shortens the time.
 */
export function stillHeld(sentAt: number, ttlMs: number, now: number): boolean {
  return now < sentAt + ttlMs;
}

/** Keeps trying to take the lease and keeps renewing it while held. */
export function keepLease(db: Db, options: KeepLeaseOptions): LeaseKeeper {
  const ttlMs = options.ttlMs ?? 6_000;
  const renewEveryMs = options.renewEveryMs ?? Math.max(100, Math.floor(ttlMs / 4));
  if (renewEveryMs >= ttlMs) throw new RangeError('renewEveryMs must be shorter than ttlMs');
  let held = false;
  let lease: Lease | null = null;
  let sentAt = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let expiry: NodeJS.Timeout | null = null;
  let running: Promise<void> = Promise.resolve();

  /** Gives the lease up locally when no renewal has succeeded in time (e.g. a hanging request). */
  function armExpiry(): void {
    if (expiry) clearTimeout(expiry);
    const left = sentAt + ttlMs - performance.now();
    expiry = setTimeout(() => {
      expiry = null;
      if (held && !stillHeld(sentAt, ttlMs, performance.now())) void Promise.resolve(change(false)).catch(() => undefined);
    }, Math.max(0, left));
  }

  async function change(next: boolean): Promise<void> {
    if (next === held) return;
    held = next;
    if (!next) lease = null;
    await options.onChange(next, lease);
  }

  async function attempt(): Promise<void> {
    const started = performance.now();
    try {
      const result = await acquireLease(db, options.name, options.holderId, ttlMs);
      if (stopped) {
        if (result.held) await releaseLease(db, options.name, options.holderId).catch(() => undefined);
        return;
      }
      if (result.held) {
        sentAt = started;
        lease = result.lease;
        armExpiry();
      }
      await change(result.held);
    } catch (error) {
      options.logger?.warn({ err: error, lease: options.name }, 'lease attempt failed');
      // Without an answer we keep the lease only as long as it surely lasts.
      if (held && !stillHeld(sentAt, ttlMs, performance.now())) await change(false);
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = null;
      running = attempt().finally(schedule);
    }, renewEveryMs);
  }

  running = attempt().finally(schedule);

  return {
    get held() {
      return held;
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (expiry) clearTimeout(expiry);
      timer = null;
      expiry = null;
      await running.catch(() => undefined);
      if (held) {
        await releaseLease(db, options.name, options.holderId).catch(() => undefined);
        await change(false);
      }
    },
  };
}
