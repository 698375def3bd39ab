/**
 * What `csr` prints on stdout: with --json exactly one JSON document, otherwise a readable text
 * form (`key: value` lines; lists as blocks separated by a blank line).
 */

export function formatJson(result: unknown): string {
  return `${JSON.stringify(result, null, 2)}\n`;
}

function formatValue(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map(formatValue).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function formatRecord(record: Record<string, unknown>): string {
  const entries = Object.entries(record);
  const width = Math.max(0, ...entries.map(([key]) => key.length));
  return entries.map(([key, value]) => `${`${key}:`.padEnd(width + 2)}${formatValue(value)}`).join('\n');
}

export function formatText(result: unknown): string {
  if (Array.isArray(result)) {
    if (result.length === 0) return '(none)\n';
    return `${result.map((item) => formatText(item).trimEnd()).join('\n\n')}\n`;
  }
  if (result !== null && typeof result === 'object') return `${formatRecord(result as Record<string, unknown>)}\n`;
  return `${formatValue(result)}\n`;
}
