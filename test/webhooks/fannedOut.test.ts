import { describe, expect, it } from 'vitest';
import { formatPosition, type Position } from '../../src/eventstore/position.js';
import { waitFannedOut } from '../../src/webhooks/fannedOut.js';

/** When an erasure may redact: the fan-out has passed it, or none can be building a delivery. */

const at = (n: number): Position => formatPosition(BigInt(n));

/** A group whose checkpoint moves through `checkpoints`, one per look, then stays at the last. */
function group(checkpoints: ({ position: Position | null } | null)[]) {
  let looks = 0;
  return {
    looks: () => looks,
    events: { groupCheckpoint: async () => checkpoints[Math.min(looks++, checkpoints.length - 1)]! },
  };
}

describe('waitFannedOut', () => {
  it.each([
    { given: 'no group (no fan-out ever ran)', checkpoints: [null], running: true, then: true, looks: 1 },
    { given: 'a group past the position', checkpoints: [{ position: at(9) }], running: true, then: true, looks: 1 },
    { given: 'a group at the position', checkpoints: [{ position: at(5) }], running: true, then: true, looks: 1 },
    { given: 'a group behind, no server running', checkpoints: [{ position: at(4) }], running: false, then: true, looks: 1 },
    { given: 'a group that has settled nothing, no server running', checkpoints: [{ position: null }], running: false, then: true, looks: 1 },
    { given: 'a group behind that catches up', checkpoints: [{ position: null }, { position: at(3) }, { position: at(5) }], running: true, then: true, looks: 3 },
  ])('given $given: answers $then after $looks look(s)', async ({ checkpoints, running, then, looks }) => {
    const fake = group(checkpoints);
    expect(await waitFannedOut(fake.events, at(5), { running: () => running, timeoutMs: 10_000 })).toBe(then);
    expect(fake.looks()).toBe(looks);
  });

  it('given a running fan-out that stays behind: answers false once its time is up', async () => {
    const fake = group([{ position: at(4) }]);
    expect(await waitFannedOut(fake.events, at(5), { running: () => true, timeoutMs: 200 })).toBe(false);
    expect(fake.looks()).toBeGreaterThan(1);
  });
});
