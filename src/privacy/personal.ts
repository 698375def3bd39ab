/** Which fields of an object hold personal data (the catalogue's `personal` marks). */

const NONE: ReadonlySet<string> = new Set();
const cache = new WeakMap<object, ReadonlySet<string>>();

/** The keys of an object's personal fields, active or not (an inactive field's old values are personal too). */
export function personalOf(def: { fields: readonly { key: string; personal?: boolean }[]; inactiveFields?: readonly { key: string; personal?: boolean }[] } | undefined): ReadonlySet<string> {
  if (!def) return NONE;
  let found = cache.get(def);
  if (!found) {
    found = new Set([...def.fields, ...(def.inactiveFields ?? [])].filter((field) => field.personal).map((field) => field.key));
    cache.set(def, found);
  }
  return found;
}
