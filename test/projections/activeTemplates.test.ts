import { describe, expect, it } from 'vitest';
import { ActiveTemplates, TEMPLATES_OBJECT, type Active } from '../../projections/automation/activeTemplates.js';
import type { RecordedEvent } from '../../src/eventstore/port.js';

/**
 * The automation reactor reads a workspace's active templates once, and again only after the log
 * shows one of that workspace's templates changed (projections/automation/activeTemplates.ts).
 */

const event = (workspaceId: string, object: string): RecordedEvent => ({
  id: `${workspaceId}-${object}`,
  stream: `record-${workspaceId}-${object}`,
  revision: 0,
  type: 'RecordUpdated',
  data: { schemaVersion: 1, workspaceId, object, recordId: 'r', changes: {} },
  metadata: { source: 'api', actor: { type: 'system', id: 's', name: 's' }, actionId: 'a', correlationId: 'c', causationId: 'c' },
  position: '0',
  created: new Date(0),
});

/** Given batches of events (workspace/object), each followed by asking for `asked`'s templates: the workspaces read from the read model at each turn. */
async function readsFor(batches: Array<{ saw: Array<[string, string]>; asked: string[] }>): Promise<string[][]> {
  let reads: string[] = [];
  const templates = new ActiveTemplates(async (workspaceId) => {
    reads.push(workspaceId);
    return [{ id: `${workspaceId}-t`, createdPosition: '0' } as unknown as Active];
  });
  const turns: string[][] = [];
  for (const batch of batches) {
    templates.saw(batch.saw.map(([workspaceId, object]) => event(workspaceId, object)));
    for (const workspaceId of batch.asked) expect((await templates.of(workspaceId))[0]!.id).toBe(`${workspaceId}-t`);
    turns.push(reads);
    reads = [];
  }
  return turns;
}

describe('the active templates the automation reactor reads', () => {
  it.each([
    ['the first batch reads each workspace once', [{ saw: [['a', 'clients'], ['b', 'clients']], asked: ['a', 'b', 'a'] }], [['a', 'b']]],
    [
      'later batches of client events read nothing',
      [
        { saw: [['a', 'clients']], asked: ['a'] },
        { saw: [['a', 'clients']], asked: ['a'] },
        { saw: [['a', 'contacts'], ['a', 'clients']], asked: ['a'] },
      ],
      [['a'], [], []],
    ],
    [
      "a template's event makes its workspace be read again, and only its",
      [
        { saw: [['a', 'clients'], ['b', 'clients']], asked: ['a', 'b'] },
        { saw: [['a', TEMPLATES_OBJECT], ['a', 'clients'], ['b', 'clients']], asked: ['a', 'b'] },
        { saw: [['b', 'clients']], asked: ['a', 'b'] },
      ],
      [['a', 'b'], ['a'], []],
    ],
    [
      'a template changed in a workspace not asked for is read when it is',
      [
        { saw: [['a', 'clients']], asked: ['a'] },
        { saw: [['a', TEMPLATES_OBJECT]], asked: [] },
        { saw: [['a', 'clients']], asked: ['a'] },
      ],
      [['a'], [], ['a']],
    ],
  ] as const)('%s', async (_what, batches, reads) => {
    expect(await readsFor(batches as unknown as Array<{ saw: Array<[string, string]>; asked: string[] }>)).toEqual(reads);
  });
});
