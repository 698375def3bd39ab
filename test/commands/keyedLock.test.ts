import { describe, expect, it } from 'vitest';
import { KeyedLock } from '../../commands/record/keyedLock.js';

describe('KeyedLock: one writer per record in a process', () => {
  it('runs work of one key one after another, in call order, telling the waiters they waited', async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    const step = (name: string) => async (waited: boolean) => {
      log.push(`${name} start ${waited}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      log.push(`${name} end`);
      return name;
    };
    const results = await Promise.all([lock.run('r1', step('a')), lock.run('r1', step('b')), lock.run('r2', step('c'))]);
    expect(results).toEqual(['a', 'b', 'c']);
    expect(log.indexOf('b start true')).toBeGreaterThan(log.indexOf('a end'));
    expect(log.indexOf('c start false')).toBeLessThan(log.indexOf('a end'));
  });

  it('lets the next writer run when one fails, and forgets idle keys', async () => {
    const lock = new KeyedLock();
    const failed = lock.run('r1', async () => {
      throw new Error('boom');
    });
    const next = lock.run('r1', async (waited) => waited);
    await expect(failed).rejects.toThrow('boom');
    expect(await next).toBe(true);
    expect(await lock.run('r1', async (waited) => waited)).toBe(false);
    expect((lock as unknown as { tails: Map<string, unknown> }).tails.size).toBe(0);
  });
});
