import type { EventStore, Subscription } from '../eventstore/port.js';
import { workspaceStream } from '../events/workspace.js';
import { buildCatalogue, type Catalogue } from '../schema/catalogue.js';
import { EMPTY_SCHEMA, evolve, SCHEMA_EVENT_TYPES, type SchemaState } from '../schema/schemaEvents.js';

/**
 * Each process's catalogues, one per workspace, read from the log once and kept until a schema
 * event of that workspace goes by: a catch-up subscription on the workspace streams (started at
 * the log's head) drops the workspace's entry, so another process's `csr fields add` is seen
 * within one poll of the log, and no request reads the log for its schema.
 *
 * `refresh` reads the stream again at once; callers use it before answering "unknown object" or
 * "unknown field", so a change made a moment ago is never refused by a catalogue one poll old.
 */

export const WORKSPACE_STREAM_PREFIX = 'workspace-';

export async function loadSchema(events: EventStore, workspaceId: string): Promise<SchemaState> {
  let state = EMPTY_SCHEMA;
  for (const event of await events.readStream(workspaceStream(workspaceId))) state = evolve(state, event, event.revision);
  return state;
}

export async function loadCatalogue(events: EventStore, workspaceId: string): Promise<Catalogue> {
  return buildCatalogue(workspaceId, await loadSchema(events, workspaceId));
}

export class Catalogues {
  private readonly ready = new Map<string, Catalogue>();
  private readonly loading = new Map<string, Promise<Catalogue>>();
  /** Bumped by every schema event of a workspace: a load that started before it is not kept. */
  private readonly generations = new Map<string, number>();
  private subscription: Subscription | null = null;
  private watching: Promise<void> | null = null;

  constructor(private readonly events: EventStore) {}

  /** Starts following the log for schema events (the cache is only used once this ran). */
  async watch(): Promise<void> {
    const head = await this.events.headPosition();
    const subscription = this.events.subscribeToAll({ from: head ?? 'start', filter: { streamPrefixes: [WORKSPACE_STREAM_PREFIX] } });
    this.subscription = subscription;
    this.watching = (async () => {
      try {
        for await (const event of subscription) {
          if (!SCHEMA_EVENT_TYPES.has(event.type)) continue;
          this.forget(event.stream.slice(WORKSPACE_STREAM_PREFIX.length));
        }
      } catch {
        // Closed, or the log failed: without the watch no catalogue may be kept any longer.
        this.subscription = null;
        this.ready.clear();
      }
    })();
  }

  /** The catalogue already built, without waiting (undefined: call `get`). */
  peek(workspaceId: string): Catalogue | undefined {
    return this.ready.get(workspaceId);
  }

  get(workspaceId: string): Promise<Catalogue> {
    const ready = this.ready.get(workspaceId);
    if (ready) return Promise.resolve(ready);
    return this.load(workspaceId);
  }

  /** Reads the workspace's schema again (when something looked unknown). */
  async refresh(workspaceId: string): Promise<Catalogue> {
    const cached = this.ready.get(workspaceId);
    const [last] = await this.events.readStream(workspaceStream(workspaceId), { direction: 'backwards', maxCount: 1 });
    if (cached && (last?.revision ?? -1) === cached.revision) return cached;
    this.forget(workspaceId);
    return this.load(workspaceId);
  }

  async close(): Promise<void> {
    const subscription = this.subscription;
    this.subscription = null;
    await subscription?.close();
    await this.watching;
  }

  private forget(workspaceId: string): void {
    this.generations.set(workspaceId, (this.generations.get(workspaceId) ?? 0) + 1);
    this.ready.delete(workspaceId);
    this.loading.delete(workspaceId);
  }

  private load(workspaceId: string): Promise<Catalogue> {
    let loading = this.loading.get(workspaceId);
    if (loading) return loading;
    const generation = this.generations.get(workspaceId) ?? 0;
    loading = loadCatalogue(this.events, workspaceId).then(
      (catalogue) => {
        if ((this.generations.get(workspaceId) ?? 0) === generation) {
          this.loading.delete(workspaceId);
          if (this.subscription) this.ready.set(workspaceId, catalogue);
        }
        return catalogue;
      },
      (error: unknown) => {
        if (this.loading.get(workspaceId) === loading) this.loading.delete(workspaceId);
        throw error;
      },
    );
    this.loading.set(workspaceId, loading);
    return loading;
  }
}
