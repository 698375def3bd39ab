import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { collectedInstructions, countInstructions, valgrindAvailable } from '../../bench/readStoreInstructions.js';
import { writeClients } from '../../bench/readStoreWrites.js';

/** The project, whose dist/ the suite's setup built (the bench's own root is its dist/ folder's parent). */
const root = fileURLToPath(new URL('../..', import.meta.url));

describe("the read store's instructions, counted by callgrind", () => {
  it.each([
    // given callgrind's stderr, then the instructions it counted
    ['==11534== Callgrind, a call-graph generating cache profiler\n==11534== \n==11534== Events    : Ir\n==11534== Collected : 1438769878\n==11534== \n==11534== I   refs:      1,438,769,878\n', 1438769878],
    ['==7== Collected : 0\n', 0],
    ['==7== Events    : Ir\n', null],
    ['Collected : 12\n', null],
  ])('reads the count from %j', (stderr, instructions) => {
    expect(collectedInstructions(stderr)).toBe(instructions);
  });

  it.runIf(valgrindAvailable())(
    'counts more instructions for a process that writes clients than for one that writes none',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'csr-test-instructions-'));
      try {
        const store = join(dir, 'read.db');
        await writeClients(root, store, 0, 200);
        const without = countInstructions(root, store, 200, 0, root);
        const written = countInstructions(root, store, 200, 100, root);
        // A written client costs hundreds of thousands of instructions; Node's start alone, hundreds of millions.
        expect(without).toBeGreaterThan(100_000_000);
        expect((written - without) / 100).toBeGreaterThan(20_000);
        expect((written - without) / 100).toBeLessThan(20_000_000);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    300_000,
  );
});
