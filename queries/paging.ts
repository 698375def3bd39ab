import { ValidationFailed } from '../src/core/errors.js';

/** limit and offset as lists take them (spec 4.1), for answers that page without filters; any other parameter is a 422. */

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export function pagingParameters(query: Record<string, string[]>, allowed: string[]): { limit: number; offset: number } {
  let limit = DEFAULT_LIMIT;
  let offset = 0;
  for (const [name, values] of Object.entries(query)) {
    if (values.length !== 1) throw new ValidationFailed(`query parameter '${name}' is given ${values.length} times; give it once`);
    const raw = values[0]!;
    if (name === 'limit') limit = integerParameter(name, raw, 1, MAX_LIMIT);
    else if (name === 'offset') offset = integerParameter(name, raw, 0, Number.MAX_SAFE_INTEGER);
    else if (!allowed.includes(name)) throw new ValidationFailed(`unknown query parameter '${name}' (only ${['limit', 'offset', ...allowed].join(', ')})`);
  }
  return { limit, offset };
}

export function integerParameter(name: string, raw: string, min: number, max: number): number {
  const value = /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `, ${min} or more` : ` from ${min} to ${max}`;
    throw new ValidationFailed(`${name} must be a whole number${range}, got "${raw}"`);
  }
  return value;
}
