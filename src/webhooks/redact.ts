/**
 * Erasure in stored webhook payloads (docs/privacy.md): wherever a payload's data shows one of
 * the erased records (the record itself, or a link to it as `{ id, name }`), its personal fields
 * and its name become null, as a request made now would show them. Answers null when nothing changed.
 */
export function redactPayloadData(data: unknown, recordIds: ReadonlySet<string>, fields: ReadonlySet<string>): unknown | null {
  let changed = false;
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const object = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    const erased = typeof object['id'] === 'string' && recordIds.has(object['id']);
    for (const [key, item] of Object.entries(object)) {
      if (erased && (fields.has(key) || key === 'name') && item !== null) {
        out[key] = null;
        changed = true;
      } else out[key] = walk(item);
    }
    return out;
  };
  const redacted = walk(data);
  return changed ? redacted : null;
}
