import { describe, expect, it } from 'vitest';
import { BatchOverlay } from '../../projections/batchOverlay.js';
import type { ReadTransaction, RecordDocument } from '../../src/readstore/port.js';

/** The rebuild's batch overlay: one store write per record changed in a batch, reads see the batch. */

const doc = (id: string, revision: number, fields: Record<string, unknown> = {}): RecordDocument => ({
  workspaceId: 'w', object: 'clients', id, name: null, fields: fields as RecordDocument['fields'], calculated: {},
  createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', createdPosition: '1', revision,
});

function store(initial: RecordDocument[] = []) {
  const rows = new Map(initial.map((d) => [d.id, d]));
  const calls: string[] = [];
  const tx: ReadTransaction = {
    async get(_w, _o, id) { calls.push(`get ${id}`); return rows.get(id) ?? null; },
    async findAll() { calls.push('findAll'); return [...rows.values()]; },
    async put(d) { calls.push(`put ${d.id}@${d.revision}`); rows.set(d.id, d); },
    async putMany(ds) { calls.push(`putMany ${ds.map((d) => `${d.id}@${d.revision}`).join(' ')}`); for (const d of ds) rows.set(d.id, d); },
    async addLinks(edges) { calls.push(`links ${edges.length}`); },
    async delete(_w, _o, id) { calls.push(`delete ${id}`); rows.delete(id); },
    async checkpoint() { return null; },
    async setCheckpoint(_p, position) { calls.push(`checkpoint ${position}`); },
  };
  return { tx, rows, calls };
}

describe('BatchOverlay', () => {
  it('writes each record once, at its last state, and reads the batch before the store', async () => {
    const { tx, rows, calls } = store([doc('old', 0)]);
    const overlay = new BatchOverlay(tx);
    expect(await overlay.get('w', 'clients', 'a')).toBeNull();
    await overlay.put(doc('a', 0));
    for (let revision = 1; revision <= 3; revision++) {
      const existing = (await overlay.get('w', 'clients', 'a'))!;
      await overlay.put({ ...existing, revision });
    }
    await overlay.put({ ...(await overlay.get('w', 'clients', 'old'))!, revision: 1 });
    await overlay.put(doc('gone', 0));
    await overlay.delete('w', 'clients', 'gone');
    expect(await overlay.get('w', 'clients', 'gone')).toBeNull();
    expect(calls).toEqual(['get a', 'get old']);
    await overlay.flush();
    expect(calls.slice(2)).toEqual(['delete gone', 'putMany a@3 old@1']);
    expect([...rows.keys()].sort()).toEqual(['a', 'old']);
  });

  it('writes the batch before a findAll, so that it sees the batch', async () => {
    const { tx, calls } = store();
    const overlay = new BatchOverlay(tx);
    await overlay.put(doc('a', 0));
    expect((await overlay.findAll('w', 'clients', [])).map((d) => d.id)).toEqual(['a']);
    expect(calls).toEqual(['putMany a@0', 'findAll']);
    await overlay.flush();
    expect(calls).toEqual(['putMany a@0', 'findAll']);
  });

  it('reads ahead many records in one call where the store has one, and answers them (and those missing) from memory', async () => {
    const { tx, calls } = store([doc('old', 0), doc('other', 0)]);
    tx.getMany = async (_w, _o, ids) => {
      calls.push(`getMany ${ids.join(' ')}`);
      return ids.flatMap((id) => (id === 'old' || id === 'other' ? [doc(id, 0)] : []));
    };
    const overlay = new BatchOverlay(tx);
    await overlay.put(doc('a', 0));
    expect((await overlay.getMany!('w', 'clients', ['a', 'old', 'new', 'old'])).map((d) => `${d.id}@${d.revision}`)).toEqual(['a@0', 'old@0']);
    expect(calls).toEqual(['getMany old new']);
    expect(await overlay.get('w', 'clients', 'new')).toBeNull();
    await overlay.put({ ...(await overlay.get('w', 'clients', 'old'))!, revision: 1 });
    expect((await overlay.get('w', 'clients', 'old'))!.revision).toBe(1);
    expect(await overlay.get('w', 'clients', 'other')).not.toBeNull();
    expect(calls).toEqual(['getMany old new', 'get other']);
  });

  it('offers no read-ahead over a store without a bulk read (its gets answer at once)', () => {
    expect(new BatchOverlay(store().tx).getMany).toBeUndefined();
  });
});
