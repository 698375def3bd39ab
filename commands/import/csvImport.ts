import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse } from 'csv-parse';
import { ValidationFailed } from '../../src/core/errors.js';
import type { ObjectDef } from '../../src/schema/types.js';
import { newAction } from '../action.js';
import type { CommandDeps } from '../deps.js';
import { MAX_RECORDS_PER_REQUEST, upsertRecords } from '../upsert.js';
import { cellValue } from './cells.js';
import { mapColumns, type Column } from './columns.js';
import { utf8Text } from './utf8.js';

/**
 * CSV import (issue 26, source `import`, actor the file's name): a file streamed through
 * csv-parse, its rows saved by the API's upsert in batches of at most 1000 (one action each, so
 * more than 20 records become bulk webhook events), matched as POST matches (unique fields, else
 * the record name, or `match`). Memory holds one batch at a time, whatever the file's size.
 * Rows are numbered as a spreadsheet shows them: the header is row 1.
 */

export interface ImportOptions {
  workspaceId: string;
  object: ObjectDef;
  fileName: string;
  match?: string;
  dryRun?: boolean;
  /** Called after each batch with the rows done so far. */
  onProgress?(rows: number): void;
}

export interface ImportResult {
  created: number;
  updated: number;
  errors: { row: number; message: string }[];
}

interface Row {
  number: number;
  record: Record<string, unknown>;
}

function recordOf(columns: Column[], cells: string[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  columns.forEach((column, i) => {
    const cell = cells[i] ?? '';
    if (column.kind === 'id') {
      if (cell.trim() !== '') record['id'] = cell.trim();
      return;
    }
    const value = cellValue(column.field, cell);
    if (value !== undefined) record[column.field.key] = value;
  });
  return record;
}

export async function importCsv(deps: CommandDeps, input: Readable, options: ImportOptions): Promise<ImportResult> {
  const result: ImportResult = { created: 0, updated: 0, errors: [] };
  const actor = { type: 'system' as const, id: 'import', name: options.fileName };
  let columns: Column[] | null = null;
  let rowNumber = 1;
  let batch: Row[] = [];

  const flush = async () => {
    if (batch.length === 0) return;
    const rows = batch;
    batch = [];
    // A row with no value at all is reported rather than sent (the API would refuse an empty record too).
    const sendable = rows.filter((row) => Object.keys(row.record).length > 0);
    for (const row of rows) if (Object.keys(row.record).length === 0) result.errors.push({ row: row.number, message: 'the row has no values' });
    if (sendable.length > 0) {
      const action = newAction(options.workspaceId, actor, 'import');
      const saved = await upsertRecords(deps, action, options.object, sendable.map((row) => row.record), options.match, { dryRun: options.dryRun ?? false });
      result.created += saved.created;
      result.updated += saved.updated;
      for (const error of saved.errors) result.errors.push({ row: sendable[error.index]!.number, message: error.message });
    }
    options.onProgress?.(rowNumber - 1);
  };

  const parser = parse({ bom: true, skip_empty_lines: true, relax_column_count: true });
  const rows = (async () => {
    for await (const cells of parser as AsyncIterable<string[]>) {
      if (!columns) {
        columns = mapColumns(options.object, cells);
        continue;
      }
      rowNumber++;
      if (cells.length > columns.length && cells.slice(columns.length).some((cell) => cell.trim() !== '')) {
        result.errors.push({ row: rowNumber, message: `the row has ${cells.length} cells, the header ${columns.length} columns` });
        continue;
      }
      batch.push({ number: rowNumber, record: recordOf(columns, cells) });
      if (batch.length >= MAX_RECORDS_PER_REQUEST) await flush();
    }
    await flush();
  })();
  try {
    await Promise.all([pipeline(input, utf8Text(), parser), rows]);
  } catch (error) {
    parser.destroy();
    if (error instanceof ValidationFailed) throw error;
    const code = (error as { code?: string }).code;
    if (typeof code === 'string' && code.startsWith('CSV_')) throw new ValidationFailed(`the file is not valid CSV: ${(error as Error).message}`);
    throw error;
  }
  if (!columns) throw new ValidationFailed('the file is empty: the first row must name the columns');
  result.errors.sort((a, b) => a.row - b.row);
  return result;
}
