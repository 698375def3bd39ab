import * as v from 'valibot';
import { ValidationFailed } from '../core/errors.js';

/** Input rules shared by the Setup use cases (keys, users, webhooks). */

export const text = (what: string, max: number) =>
  v.pipe(
    v.string(`${what} must be text`),
    v.trim(),
    v.nonEmpty(`${what} must not be empty`),
    v.maxLength(max, `${what} must be at most ${max} characters`),
  );

/** 'all' or a non-empty list of object keys (checked against the workspace with `checkObjectKeys`). */
export const ObjectsInput = v.optional(
  v.union(
    [
      v.literal('all'),
      v.pipe(
        v.array(text('an object key', 100), 'objects must be "all" or a list of object keys'),
        v.nonEmpty('objects must name at least one object (or be "all")'),
      ),
    ],
    'objects must be "all" or a list of object keys',
  ),
  'all',
);

export function parse<const TSchema extends v.GenericSchema>(schema: TSchema, input: unknown): v.InferOutput<TSchema> {
  const result = v.safeParse(schema, input);
  if (!result.success) {
    // The schemas' messages name their field.
    throw new ValidationFailed(result.issues[0].message);
  }
  return result.output;
}

/** The keys as given, without repeats; every one must be an object of the workspace. */
export function checkObjectKeys(known: Iterable<string>, objects: string[]): string[] {
  const knownSet = new Set(known);
  const unknown = objects.filter((object) => !knownSet.has(object));
  if (unknown.length > 0) {
    throw new ValidationFailed(
      `unknown object${unknown.length > 1 ? 's' : ''} ${unknown.map((object) => `"${object}"`).join(', ')}; the workspace's objects are: ${[...knownSet].join(', ')}`,
    );
  }
  return [...new Set(objects)];
}
