import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { reactorProjections } from '../../projections/reactors.js';
import { assertDeclared, followers, registeredProjections } from '../../projections/registry.js';
import { rollupReactor } from '../../projections/rollupReactor.js';
import type { Projection } from '../../projections/projection.js';
import type { EventStore } from '../../src/eventstore/port.js';
import type { ReadStore } from '../../src/readstore/port.js';
import type { Catalogues } from '../../src/setup/catalogues.js';

/**
 * One registry of followers (projections/registry.ts): what the projector builds is what the
 * registry declares, so the listings that read the registry (status, the Setup page, /metrics)
 * show what runs. Built here without stores: nothing is started.
 */

function built(): Projection[] {
  const deps = {
    events: {} as EventStore,
    readStore: {} as ReadStore,
    logger: pino({ level: 'silent' }),
    clock: () => new Date(),
    fire: async () => ({ status: 'failed' as const, reason: 'not here' }),
    writeHealthScores: async () => undefined,
  };
  return [
    ...registeredProjections({ catalogues: {} as Catalogues }),
    rollupReactor({ readStore: deps.readStore, setRollups: async () => null }),
    ...(reactorProjections(deps) as Projection[]),
  ];
}

describe('the registry of followers', () => {
  it('declares every projection, reactor and the webhook fan-out, with name, kind and version', () => {
    expect(followers().map(({ name, kind, version }) => ({ name, kind, version }))).toEqual([
      { name: 'records', kind: 'read-model', version: 2 },
      { name: 'rollups', kind: 'reactor', version: 1 },
      { name: 'automation', kind: 'reactor', version: 1 },
      { name: 'health score', kind: 'reactor', version: 1 },
      { name: 'webhooks', kind: 'fan-out', version: null },
    ]);
  });

  it('is what the projector builds: the same followers, in its order, of the same versions', () => {
    expect(() => assertDeclared(built(), ['read-model', 'reactor'])).not.toThrow();
  });

  it('stops a projector that would run a follower it does not declare, or another version of one', () => {
    const [records, rollups, ...rest] = built();
    expect(() => assertDeclared([records!, { ...rollups!, version: 2 }, ...rest], ['read-model', 'reactor'])).toThrow(/rollups \(reactor v2\)/);
    expect(() => assertDeclared([records!, ...rest], ['read-model', 'reactor'])).toThrow(/where the registry declares/);
  });
});
