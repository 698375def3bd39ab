import type { Pool, PoolClient } from '../../postgres/pool.js';
import type { ApiKey } from '../port.js';

/** The channel every change of a key (revocation, rename, rate limit) is announced on, in its own statement. */
export const KEYS_CHANNEL = 'csr_api_keys';

/** At most this many keys are remembered; more distinct keys in use just mean more lookups. */
const KEY_CACHE_SIZE = 1_000;
/**
 * How long a remembered key is trusted at most. Behind a transaction-pooling proxy LISTEN succeeds
 * but nothing is ever delivered; this bounds how long another process's revocation can go unseen
 * there. With the server reached directly the announcement comes first.
 */
export const KEY_TRUST_MS = 500;

/**
 * Keys by fingerprint, trusted only while this process listens for key changes: a lookup per
 * request was a round trip of its own, half of a GET's. Every statement that changes a key
 * announces it (pg_notify, delivered at commit to every listening process); the announcement, or
 * a change made through this process's store, drops every entry at once, so a revocation by any
 * process takes effect as soon as its commit is delivered (as the SQLite store's cache rechecks
 * the file within 2 ms). Nothing is trusted without a listener: from the start until LISTEN is in
 * place, and from the moment the listening connection fails until it listens again, every lookup
 * asks the server. A key read while a change was announced is not remembered, and none is trusted
 * for longer than KEY_TRUST_MS.
 */
export class KeyCache {
  private readonly keys = new Map<string, { key: ApiKey; until: number }>();
  private listener: PoolClient | null = null;
  private connecting: Promise<void> | null = null;
  /** Bumped by every change seen (and by losing the listener): a lookup that spans one is not remembered. */
  private changes = 0;
  private closed = false;

  constructor(private readonly pool: Pool) {}

  /** The key as remembered; undefined when it must be asked for. */
  get(fingerprint: string): ApiKey | undefined {
    if (!this.listener) {
      this.listen();
      return undefined;
    }
    const known = this.keys.get(fingerprint);
    if (known === undefined || performance.now() >= known.until) return undefined;
    return known.key;
  }

  /** A lookup of the server, remembered when nothing changed meanwhile and this process listened throughout. */
  async lookUp(fingerprint: string, read: () => Promise<ApiKey | null>): Promise<ApiKey | null> {
    const listener = this.listener;
    const changes = this.changes;
    const askedAt = performance.now();
    const key = await read();
    if (key && listener !== null && listener === this.listener && changes === this.changes) {
      if (this.keys.size >= KEY_CACHE_SIZE) this.keys.clear();
      this.keys.set(fingerprint, { key, until: askedAt + KEY_TRUST_MS });
    }
    return key;
  }

  /** A change of a key, through this process or announced by another. */
  changed(): void {
    this.changes += 1;
    this.keys.clear();
  }

  close(): void {
    this.closed = true;
    this.drop();
  }

  private listen(): void {
    if (this.listener || this.connecting || this.closed) return;
    this.connecting = (async () => {
      let client: PoolClient | null = null;
      try {
        client = await this.pool.connect();
        const lost = () => {
          if (this.listener === client) this.drop();
        };
        client.on('error', lost);
        client.on('end', lost);
        client.on('notification', (message) => {
          if (message.channel === KEYS_CHANNEL) this.changed();
        });
        await client.query(`LISTEN ${KEYS_CHANNEL}`);
        if (this.closed) client.release(true);
        else this.listener = client;
      } catch {
        // The server is away: lookups ask it, and the next one tries to listen again.
        client?.release(true);
      } finally {
        this.connecting = null;
      }
    })();
  }

  private drop(): void {
    const client = this.listener;
    this.listener = null;
    // Changes may have been missed while the connection was going.
    this.changed();
    if (client) {
      try {
        // Destroyed, not returned: it holds the LISTEN.
        client.release(true);
      } catch {
        // Already released.
      }
    }
  }
}
