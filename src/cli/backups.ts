import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { productionUrls } from '../backends.js';
import type { Config } from '../config.js';
import { runningServers } from '../runtime/serverPids.js';
import { backupEmbeddedStore, restoreEmbeddedStore } from '../sqlite/backup.js';
import type { CliResource } from './context.js';

/** `csr backup <file>` and `csr restore <file>`: the embedded store (production backends have their own tools). */

function embeddedOnly(config: Config, what: string): void {
  if (productionUrls(config)) {
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
  },
};

export const restore: CliResource = {
  name: 'restore',
  description: 'put a backup back in place of the embedded store (the server must be stopped)',
  commands: {},
  direct: {
    usage: '<file>',
    description: 'replace the store in DATA_DIR with the backup in <file>; the server catches up or rebuilds read models when started',
    positionals: ['file'],
    withoutStores: true,
    async run({ positionals }, context) {
      embeddedOnly(context.config, 'csr restore');
      if (!existsSync(resolve(positionals[0]!))) throw new Error(`no backup file at ${resolve(positionals[0]!)}`);
      const running = runningServers(context.config.dataDir);
      if (running.length > 0) {
        throw new Error(`a server is running on ${resolve(context.config.dataDir)} (pid ${running.join(', ')}): stop it first, then restore`);
      }
      return restoreEmbeddedStore(context.config.dataDir, resolve(positionals[0]!));
    },
  },
};
