/**
 * What a parsed JSON body may hold, checked wherever it is parsed (on the API's event loop or on
 * the parsing thread, `jsonParser.ts`): at most MAX_DEPTH levels and MAX_BODY_VALUES values.
 *
 * The values bound is the body's cost: parsing, walking and handing a body over between threads
 * cost per value (an empty object costs as much as a 5 KB string), and a 5 MB array of 1.66
 * million `{}` took the event loop for most of a second. No request the API accepts needs more:
 * a 1,000-record upsert of 200 fields each holds about 201,000.
 */

export const MAX_DEPTH = 32;
export const MAX_BODY_VALUES = 250_000;

export type BodyProblem = { status: 413 | 422; message: string };

/** Why a document cannot be parsed as a body (invalid JSON, too deep, too many values), or null. */
export function parseProblem(text: string): { value: unknown } | { problem: BodyProblem } {
  if (text.trim() === '') return { problem: { status: 422, message: 'the request body is empty; send a JSON document' } };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // V8 reports runaway nesting as a RangeError: still the client's malformed input.
    const reason = error instanceof RangeError ? 'it is nested too deeply' : (error as Error).message;
    return { problem: { status: 422, message: `the request body is not valid JSON: ${reason}` } };
  }
  const problem = shapeProblem(value);
  return problem ? { problem } : { value };
}

/** Iterative, so that hostile nesting cannot exhaust the stack; stops at the first bound passed. */
function shapeProblem(value: unknown): BodyProblem | null {
  let values = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    values += 1;
    if (values > MAX_BODY_VALUES) {
      return { status: 413, message: `the request body holds more than ${MAX_BODY_VALUES} JSON values; send fewer records per request` };
    }
    if (typeof current !== 'object' || current === null) continue;
    if (depth > MAX_DEPTH) return { status: 422, message: `the request body is nested more than ${MAX_DEPTH} levels deep` };
    if (Array.isArray(current)) for (const child of current) stack.push([child, depth + 1]);
    else for (const key in current) stack.push([(current as Record<string, unknown>)[key], depth + 1]);
  }
  return null;
}
