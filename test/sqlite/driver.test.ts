import { describe, expect, it } from 'vitest';
import { loadSqliteDriver } from '../../src/sqlite/driver.js';

/** Which better-sqlite3 each Node.js gets (the reasons are in src/sqlite/driver.ts). */

describe('loadSqliteDriver', () => {
  const loader = (available: Record<string, unknown>) => {
    const asked: string[] = [];
    const load = (name: string) => {
      asked.push(name);
      if (!(name in available)) throw new Error(`Cannot find module '${name}'`);
      return available[name];
    };
    return { asked, load };
  };

  it('loads 13.x where Node-API 10 exists (Node 22.14 and later, 24)', () => {
    const { asked, load } = loader({ 'better-sqlite3': 'thirteen', 'better-sqlite3-node20': 'twelve' });
    expect(loadSqliteDriver(10, load)).toBe('thirteen');
    expect(asked).toEqual(['better-sqlite3']);
  });

  it('loads 12.x, the optional better-sqlite3-node20, below it (Node 20)', () => {
    const { asked, load } = loader({ 'better-sqlite3': 'thirteen', 'better-sqlite3-node20': 'twelve' });
    expect(loadSqliteDriver(9, load)).toBe('twelve');
    expect(asked).toEqual(['better-sqlite3-node20']);
  });

  it('says what to do when 12.x did not install, and never falls back to 13.x there', () => {
    const { asked, load } = loader({ 'better-sqlite3': 'thirteen' });
    expect(() => loadSqliteDriver(9, load)).toThrow(/needs better-sqlite3 12.*better-sqlite3-node20.*C\+\+ compiler.*Node\.js 22\.14 or later/);
    expect(asked).toEqual(['better-sqlite3-node20']);
  });

  it('says what to do when 13.x did not install (an optional dependency since npm skips it on Node 20)', () => {
    const { load } = loader({ 'better-sqlite3-node20': 'twelve' });
    expect(() => loadSqliteDriver(10, load)).toThrow(/needs better-sqlite3 13, an optional dependency npm skips on Node 20.*npm install/);
  });
});
