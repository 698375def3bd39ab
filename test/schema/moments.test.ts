import { describe, expect, it } from 'vitest';
import { parseMoment } from '../../src/schema/dates.js';

/**
 * The one strict reading of a moment a caller gives (`as_of`, `updated_since`, `--since`,
 * `--until`): given a text, when parsed, then the moment in UTC, or the reason it is none. A day
 * that does not exist is refused, never rolled over as JavaScript's Date does (issue 39 item 5).
 */

describe('parseMoment (given a text, when parsed, then a moment or a problem)', () => {
  it.each<[string, { dateOnly?: boolean }, string]>([
    ['2026-02-28T10:00:00Z', {}, '2026-02-28T10:00:00.000Z'],
    ['2024-02-29T10:00:00Z', {}, '2024-02-29T10:00:00.000Z'],
    ['2026-03-01T10:00:00.5+02:00', {}, '2026-03-01T08:00:00.500Z'],
    ['2026-03-01T10:00+0200', {}, '2026-03-01T08:00:00.000Z'],
    ['2026-12-31T23:59:59.999999Z', {}, '2026-12-31T23:59:59.999Z'],
    ['2026-02-28', { dateOnly: true }, '2026-02-28T00:00:00.000Z'],
  ])('%s %j -> %s', (text, options, expected) => {
    expect(parseMoment(text, options)).toEqual({ ok: true, at: new Date(expected) });
  });

  it.each<[string, { dateOnly?: boolean }, RegExp]>([
    ['2026-02-30T10:00:00Z', {}, /^there is no 2026-02-30$/],
    ['2025-02-29T00:00:00Z', {}, /^there is no 2025-02-29$/],
    ['2026-04-31T00:00:00+02:00', {}, /^there is no 2026-04-31$/],
    ['2026-13-01T00:00:00Z', {}, /^there is no 2026-13-01$/],
    ['2026-00-10T00:00:00Z', {}, /^there is no 2026-00-10$/],
    ['2026-02-30', { dateOnly: true }, /^there is no 2026-02-30$/],
    ['2026-02-28T24:00:00Z', {}, /^there is no time 24:00:00$/],
    ['2026-02-28T10:60:00Z', {}, /^there is no time 10:60:00$/],
    ['2026-02-28T10:00:61Z', {}, /^there is no time 10:00:61$/],
    ['2026-02-28T10:00:00+24:00', {}, /^there is no time zone \+24:00$/],
    ['2026-02-28', {}, /not an ISO 8601 date-time/],
    ['2026-02-28T10:00:00', {}, /not an ISO 8601 date-time/],
    ['2026-02-28 10:00:00Z', {}, /not an ISO 8601 date-time/],
    ['yesterday', { dateOnly: true }, /not an ISO 8601 date or date-time/],
  ])('%s %j -> %s', (text, options, problem) => {
    const parsed = parseMoment(text, options);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? '' : parsed.problem).toMatch(problem);
  });
});
