import { randomUUID } from 'node:crypto';
import { NotFound, ValidationFailed } from '../core/errors.js';
import { RECORD_ERASED, recordStream, type RecordErasedData } from '../events/records.js';
import type { Actor, RecordedEvent } from '../eventstore/port.js';
import type { Position } from '../eventstore/position.js';
import type { Catalogue } from '../schema/catalogue.js';
import type { WebhookStore } from '../webhooks/port.js';
import { everLinked, linkingObjects, type LinkedRecord } from './linked.js';
import { personalOf } from './personal.js';
import { storedEvents, type PrivateEventStore } from './privateEvents.js';
import { isSealed } from './vault.js';
import { sealData } from './sealing.js';
import { hashOf } from '../eventstore/chain.js';

/**
 * `csr privacy erase` (docs/privacy.md): crypto-shredding. The data keys of the contacts and of
 * every record that links or ever linked them are deleted, so their personal values read null in
 * every event, on every backend; an `erased` event per record (actor, time, reason, field keys,
 * never a value) tells readers, auditors and webhook consumers. Erasing again is a no-op.
 */

export interface ErasureDeps {
  events: PrivateEventStore;
  catalogue: Catalogue;
  webhooks: Pick<WebhookStore, 'redactPayloads'>;
  /** Resolves once the read models show the log up to `position`. */
  waitVisible(position: Position): Promise<void>;
  /**
   * Resolves once the webhook fan-out, where one may run, has stored the deliveries of every event
   * up to `position`; false when it had not within its time.
   */
  fannedOut(position: Position): Promise<boolean>;
  /** Leaves no old page of the stores on disk (WAL checkpoints); a no-op where there are none. */
  scrub(): Promise<void>;
}

export interface EraseRequest {
  workspaceId: string;
  contactIds: string[];
  reason: string | null;
  actor: Actor;
  /** Other records holding the person's data (personal custom fields naming them): erased alike. */
  alsoRecords?: LinkedRecord[];
  /** Re-encrypt events written before encryption (embedded store only); refused otherwise. */
  rewriteLegacy?: boolean;
}

export interface ErasedRecord {
  object: string;
  id: string;
  fields: string[];
}

export interface ErasureResult {
  contacts: string[];
  erased: ErasedRecord[];
  /** Records already erased (nothing to do for them). */
  alreadyErased: LinkedRecord[];
  erasedAt: string | null;
  /** How long the erasure took, in milliseconds. */
  tookMs: number;
  /**
   * Set when the webhook fan-out had not passed the erasure in time: deliveries it had rendered
   * before may still be stored with the old values afterwards (docs/privacy.md).
   */
  webhooksBehind?: true;
}

interface Target extends LinkedRecord {
  sealed: Set<string>;
  legacy: Set<string>;
}

/** Which personal fields hold sealed values in these stored events, and which hold plaintext (written before encryption). */
export function inspect(events: RecordedEvent[], personal: ReadonlySet<string> | 'any'): { sealed: Set<string>; legacy: Set<string> } {
  const sealed = new Set<string>();
  const legacy = new Set<string>();
  const see = (key: string, value: unknown) => {
    if (value === null || value === undefined) return;
    if (personal === 'any' ? !isSealed(value) : !personal.has(key)) return;
    (isSealed(value) ? sealed : legacy).add(key);
  };
  for (const event of events) {
    const data = event.data as { fields?: Record<string, unknown>; changes?: Record<string, { from: unknown; to: unknown }> };
    if (event.type === 'RecordCreated' || event.type === 'RecordDeleted') for (const [k, v] of Object.entries(data.fields ?? {})) see(k, v);
    if (event.type === 'RecordUpdated') for (const [k, c] of Object.entries(data.changes ?? {})) (see(k, c.from), see(k, c.to));
  }
  return { sealed, legacy };
}

/**
 * Re-encrypts a record's events written before encryption under its data key, so that deleting
 * the key erases them too. Only events the audit chain does not cover (written before it) can be
 * rewritten; plaintext in a chained event is refused, as editing it would break the chain.
 */
async function rewriteLegacy(deps: ErasureDeps, target: Target, personal: ReadonlySet<string>): Promise<void> {
  const stored = storedEvents(deps.events);
  const events = await stored.readStream(recordStream(target.id));
  const chained = events.filter((event) => hashOf(event.metadata) !== null && inspect([event], personal).legacy.size > 0);
  if (chained.length > 0) {
    throw new ValidationFailed(
      `--rewrite-legacy: ${target.object} ${target.id} holds personal values written before encryption in events the audit chain covers; ` +
        're-encrypting them would break the chain, so nothing was erased (docs/privacy.md)',
    );
  }
  const key = await deps.events.vault.keyFor(target.id);
  try {
    await stored.rewriteUnchained(recordStream(target.id), (event) => (inspect([event], personal).legacy.size > 0 ? sealData(event.type, event.data, personal, key) : null));
  } catch (error) {
    if (error instanceof ValidationFailed) throw new ValidationFailed(`--rewrite-legacy refused: ${error.message}; nothing was erased`);
    throw error;
  }
  target.sealed = new Set([...target.sealed, ...target.legacy]);
}

export async function eraseContacts(deps: ErasureDeps, request: EraseRequest): Promise<ErasureResult> {
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  const stored = storedEvents(deps.events);
  const { workspaceId, catalogue } = { workspaceId: request.workspaceId, catalogue: deps.catalogue };
  for (const id of request.contactIds) {
    const [first] = await stored.readStream(recordStream(id), { maxCount: 1 });
    if (!first || first.data['workspaceId'] !== workspaceId || first.data['object'] !== 'contacts') throw new NotFound(`contact ${id} not found in this workspace`);
  }
  const linked = await everLinked(stored, workspaceId, linkingObjects(catalogue), new Set(request.contactIds));
  const targets: Target[] = [];
  const linkedIds = new Set(linked.map((record) => record.id));
  const also = (request.alsoRecords ?? []).filter((record) => !linkedIds.has(record.id) && !request.contactIds.includes(record.id));
  for (const record of [...request.contactIds.map((id) => ({ object: 'contacts', id })), ...linked, ...also]) {
    const personal = personalOf(catalogue.object(record.object));
    targets.push({ ...record, ...inspect(await stored.readStream(recordStream(record.id)), personal) });
  }
  const legacy = targets.filter((target) => target.legacy.size > 0);
  if (legacy.length > 0 && !request.rewriteLegacy) {
    throw new ValidationFailed(
      `${legacy.length} record(s) of this person hold personal values written before encryption (${legacy.map((t) => `${t.object} ${t.id}`).join(', ')}); ` +
        'nothing was erased. Run again with --rewrite-legacy to re-encrypt their old events first (embedded store only)',
    );
  }
  for (const target of legacy) await rewriteLegacy(deps, target, personalOf(catalogue.object(target.object)));

  const keys = await deps.events.vault.existingKeys(targets.map((target) => target.id));
  const due = targets.filter((target) => keys.has(target.id));
  const already = targets.filter((target) => !keys.has(target.id)).map(({ object, id }) => ({ object, id }));
  if (due.length === 0) return { contacts: request.contactIds, erased: [], alreadyErased: already, erasedAt: null, tookMs: took() };

  const order = (object: string, fields: Set<string>) => [...personalOf(catalogue.object(object))].filter((key) => fields.has(key));
  const actionId = randomUUID();
  const actionCounts: Record<string, number> = {};
  for (const target of due) actionCounts[target.object] = (actionCounts[target.object] ?? 0) + 1;
  const metadata = { source: 'app' as const, actor: request.actor, actionId, correlationId: actionId, causationId: actionId, actionCounts };
  const erased: ErasedRecord[] = [];
  let last: Position | null = null;
  let erasedAt: string | null = null;
  for (const target of due) {
    const fields = order(target.object, target.sealed);
    const data: RecordErasedData = { schemaVersion: 1, workspaceId, object: target.object, recordId: target.id, fields, reason: request.reason };
    const result = await deps.events.append(recordStream(target.id), [{ id: randomUUID(), type: RECORD_ERASED, data: { ...data }, metadata }], { expectedRevision: 'stream_exists' });
    last = result.position;
    erased.push({ object: target.object, id: target.id, fields });
  }
  // The erasure itself: without its key no sealed value of these records opens again.
  await deps.events.vault.deleteKeys(due.map((target) => target.id));
  erasedAt = new Date().toISOString();
  if (last) await deps.waitVisible(last);
  // A delivery the fan-out rendered before the read model showed the erasure must be stored
  // before the redaction below, or it would keep the values it was rendered with.
  const fannedOut = last ? await deps.fannedOut(last) : true;
  await deps.webhooks.redactPayloads(workspaceId, due.map((target) => target.id), [...new Set(erased.flatMap((record) => record.fields))]);
  await deps.scrub();
  return { contacts: request.contactIds, erased, alreadyErased: already, erasedAt, tookMs: took(), ...(fannedOut ? {} : { webhooksBehind: true as const }) };
}

