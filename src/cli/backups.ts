import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { isEmbedded, productionUrls } from '../backends.js';
import type { Config } from '../config.js';
import { runningServers } from '../runtime/serverPids.js';
import { backupEmbeddedStore, restoreEmbeddedStore, type BackupResult } from '../sqlite/backup.js';
import { openCliContext, stringOption, type CliResource } from './context.js';
import { parseLedger, type LedgerEntry } from '../privacy/ledger.js';
import { reapplyLedger } from './privacy.js';

/** `csr backup <file>` and `csr restore <file>`: the embedded store (production backends have their own tools). */

function embeddedOnly(config: Config, what: string): void {
  if (config.databaseUrl) {
    throw new Error(`${what} covers the embedded store only; on PostgreSQL use pg_dump and pg_restore (a consistent copy while the service runs; docs/operations.md, "Backing up PostgreSQL")`);
  }
  if (!isEmbedded(config) && productionUrls(config)) {
    throw new Error(`${what} covers the embedded store only; back up EventStoreDB and MongoDB with their own tools (docs/operations.md)`);
  }
}

export const backup: CliResource = {
  name: 'backup',
  description: 'a consistent copy of the embedded store, also while the server runs',
  commands: {},
  direct: {
    usage: '<file>',
    description: 'write every store file of DATA_DIR into <file> (a tar archive) with SQLite online backups',
    positionals: ['file'],
    withoutStores: true,
    async run({ positionals }, context) {
      embeddedOnly(context.config, 'csr backup');
      return backupEmbeddedStore(context.config.dataDir, resolve(positionals[0]!));
    },
    text(result: BackupResult) {
      const width = Math.max(...result.files.map((file) => file.name.length));
      const files = result.files.map((file) => `  ${file.name.padEnd(width)}  ${sizeOf(file.bytes).padStart(9)}`);
      return [`${result.file}: ${result.files.length} store files, ${sizeOf(result.bytes)} (${result.createdAt})`, ...files, ''].join('\n');
    },
  },
};

function sizeOf(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export const restore: CliResource = {
  name: 'restore',
  description: 'put a backup back in place of the embedded store (the server must be stopped)',
  commands: {},
  direct: {
    usage: '<file> [--reapply-erasures <ledger>]',
    description:
      'replace the store in DATA_DIR with the backup in <file>; the server catches up or rebuilds read models when started. ' +
      'With --reapply-erasures, erasures listed in <ledger> (csr privacy erasures --json) made after the backup are made again',
    positionals: ['file'],
    options: { 'reapply-erasures': { type: 'string' } },
    withoutStores: true,
    async run({ positionals, values }, context) {
      embeddedOnly(context.config, 'csr restore');
      if (!existsSync(resolve(positionals[0]!))) throw new Error(`no backup file at ${resolve(positionals[0]!)}`);
      const running = runningServers(context.config.dataDir);
      if (running.length > 0) {
        throw new Error(`a server is running on ${resolve(context.config.dataDir)} (pid ${running.join(', ')}): stop it first, then restore`);
      }
      const ledgerFile = stringOption(values, 'reapply-erasures');
      // Read before anything is replaced: a bad ledger must not leave a restored, unerased store.
      const ledger = ledgerFile === undefined ? null : readLedger(resolve(ledgerFile));
      const restored = await restoreEmbeddedStore(context.config.dataDir, resolve(positionals[0]!));
      if (!ledger) return restored;
      const stores = await openCliContext(context.config);
      try {
        return { ...restored, reapplied: (await reapplyLedger(stores, ledger)).erased.length };
      } finally {
        await stores.close();
      }
    },
  },
};

function readLedger(path: string): LedgerEntry[] {
  if (!existsSync(path)) throw new Error(`no erasure ledger at ${path}`);
  return parseLedger(readFileSync(path, 'utf8'));
}
