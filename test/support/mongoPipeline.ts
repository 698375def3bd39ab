/**
 * MongoDB's update-pipeline rules, as its manual states them, for the subset of stages and
 * expression operators the MongoDB adapters use: the adapters' pure parts are checked against
 * these where no MongoDB server runs (their contract suites need one). An operator or stage not
 * written here throws, so an adapter cannot start using one that no test has rules for.
 *
 * - An update with a pipeline may use only $addFields/$set, $project/$unset and $replaceRoot/$replaceWith;
 *   with upsert and no match, the new document is made from the filter's equality conditions
 *   (here `_id`), then the pipeline runs on it.
 * - Every expression of one $set stage reads the stage's input document (not the fields the same
 *   stage sets).
 * - "$name" is the field's value, or *missing*. $ifNull answers its replacement for null or missing.
 * - $add, $subtract, $multiply, $divide, $floor answer null when an argument is null or missing;
 *   $divide by zero is an error.
 * - $min and $max (array form) ignore null and missing arguments; all of them so: null.
 * - $eq and $lt compare by BSON order (null sorts before numbers). Here comparing a *missing*
 *   value throws: the adapters wrap every stored field in $ifNull, and this keeps them to it.
 * - $cond [if, then, else]: false, null, 0 and missing are false, anything else true.
 */

type Doc = Record<string, unknown>;
const MISSING = Symbol('missing');
type Value = unknown;

const isNullish = (value: Value) => value === null || value === MISSING || value === undefined;

function numbers(operator: string, values: Value[]): number[] | null {
  if (values.some(isNullish)) return null;
  for (const value of values) if (typeof value !== 'number') throw new Error(`${operator} takes numbers, got ${String(value)}`);
  return values as number[];
}

function compareOrder(operator: string, a: Value, b: Value): number {
  if (a === MISSING || b === MISSING) throw new Error(`${operator} compares a missing field: wrap it in $ifNull`);
  const rank = (value: Value) => (value === null ? 0 : typeof value === 'number' ? 1 : 2);
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (a === null) return 0;
  throw new Error(`${operator}: only null and numbers are compared here`);
}

export function evaluate(expression: unknown, doc: Doc): Value {
  if (typeof expression === 'string') return expression.startsWith('$') ? (expression.slice(1) in doc ? doc[expression.slice(1)] : MISSING) : expression;
  if (expression === null || typeof expression !== 'object') return expression;
  if (Array.isArray(expression)) return expression.map((item) => evaluate(item, doc));
  const keys = Object.keys(expression);
  if (keys.length !== 1 || !keys[0]!.startsWith('$')) throw new Error(`not an expression here: ${JSON.stringify(expression)}`);
  const operator = keys[0]!;
  const raw = (expression as Doc)[operator];
  if (operator === '$literal') return raw;
  const args = (Array.isArray(raw) ? raw : [raw]).map((item) => evaluate(item, doc));
  switch (operator) {
    case '$ifNull':
      return isNullish(args[0]) ? args[1] : args[0];
    case '$add':
      return numbers(operator, args)?.reduce((sum, value) => sum + value, 0) ?? null;
    case '$multiply':
      return numbers(operator, args)?.reduce((product, value) => product * value, 1) ?? null;
    case '$subtract': {
      const [a, b] = numbers(operator, args) ?? [];
      return a === undefined ? null : a - b!;
    }
    case '$divide': {
      const [a, b] = numbers(operator, args) ?? [];
      if (a === undefined) return null;
      if (b === 0) throw new Error('$divide by zero is an error');
      return a / b!;
    }
    case '$floor': {
      const [a] = numbers(operator, args) ?? [];
      return a === undefined ? null : Math.floor(a);
    }
    case '$min':
    case '$max': {
      const present = args.filter((value) => !isNullish(value));
      if (present.length === 0) return null;
      return present.reduce((best, value) => ((operator === '$min' ? compareOrder(operator, value, best) < 0 : compareOrder(operator, value, best) > 0) ? value : best));
    }
    case '$eq':
      return compareOrder(operator, args[0], args[1]) === 0;
    case '$lt':
      return compareOrder(operator, args[0], args[1]) < 0;
    case '$cond': {
      if (args.length !== 3) throw new Error('$cond takes [if, then, else]');
      const condition = args[0];
      return condition === false || isNullish(condition) || condition === 0 ? args[2] : args[1];
    }
    default:
      throw new Error(`no rules written here for the operator ${operator}`);
  }
}

/** What findOneAndUpdate(filter `{ _id }`, pipeline, { upsert: true, returnDocument: 'after' }) leaves. */
export function applyUpdatePipeline(stored: Doc | null, id: string, pipeline: Doc[]): Doc {
  let doc: Doc = stored ? { ...stored } : { _id: id };
  for (const stage of pipeline) {
    const [name, ...others] = Object.keys(stage);
    if (others.length > 0) throw new Error('one stage per pipeline entry');
    const spec = stage[name!];
    if (name === '$set' || name === '$addFields') {
      const next = { ...doc };
      for (const [key, expression] of Object.entries(spec as Doc)) {
        const value = evaluate(expression, doc);
        if (value === MISSING) delete next[key];
        else next[key] = value;
      }
      doc = next;
    } else if (name === '$unset') {
      doc = { ...doc };
      for (const key of Array.isArray(spec) ? spec : [spec]) delete doc[key as string];
    } else {
      throw new Error(`an update pipeline takes no ${name} stage here`);
    }
  }
  return doc;
}
