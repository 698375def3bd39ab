import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root, spawnServer, type Server } from './servers.js';

/**
 * The peer: the same routes on Emmett with emmett-sqlite and an inline projection
 * (bench/peer/emmettServer.mjs). Emmett is a dependency of the bench only: it is installed here,
 * into .bench/peer/ (gitignored) with a package.json of its own, never into the project's
 * node_modules, and the installed copy is reused while that package.json stays the same.
 */

const PEER_DIR = join(root, '.bench', 'peer');
const SERVERS = { embedded: 'emmettServer.mjs', postgres: 'emmettPgServer.mjs' } as const;

/** Hono as the project has it installed, so that the peer and bare Hono serve HTTP alike. */
const installedVersion = (name: string) => (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

function peerPackage(): string {
  return `${JSON.stringify(
    {
      name: 'csr-bench-peer',
      private: true,
      type: 'module',
      dependencies: {
        '@event-driven-io/emmett': '~0.42.0',
        '@event-driven-io/emmett-sqlite': '~0.42.0',
        sqlite3: '^5.1.7',
        // The PostgreSQL peer: emmett-postgresql with the Pongo and Dumbo releases it names as peers.
        '@event-driven-io/emmett-postgresql': '~0.42.0',
        '@event-driven-io/pongo': '0.16.11',
        '@event-driven-io/dumbo': '0.12.7',
        pg: installedVersion('pg'),
        ansis: '^3.3.2',
        'cli-table3': '^0.6.5',
        // Emmett's peer dependencies: installed by name, since the registry may lack the exact
        // emmett release that emmett-sqlite pins as its peer (hence --legacy-peer-deps).
        uuid: '^10.0.0',
        'async-retry': '^1.3.3',
        commander: '^12.1.0',
        hono: installedVersion('hono'),
        '@hono/node-server': installedVersion('@hono/node-server'),
      },
      allowScripts: { sqlite3: true },
    },
    null,
    2,
  )}\n`;
}

/** Installs the peer (once per package.json) and returns the Emmett releases it runs on `backend`. */
export function installPeer(backend: keyof typeof SERVERS = 'embedded'): string {
  mkdirSync(PEER_DIR, { recursive: true });
  const manifest = join(PEER_DIR, 'package.json');
  const wanted = peerPackage();
  const installed = existsSync(manifest) && readFileSync(manifest, 'utf8') === wanted && existsSync(join(PEER_DIR, 'node_modules', '@event-driven-io', 'emmett-postgresql'));
  if (!installed) {
    writeFileSync(manifest, wanted);
    console.error('bench: installing the Emmett peer into .bench/peer (once)');
    // Without the npm_config_* of the `npm run bench` around us, which would point at the project.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
    execFileSync('npm', ['install', '--prefix', PEER_DIR, '--no-audit', '--no-fund', '--legacy-peer-deps', '--loglevel=error'], { cwd: PEER_DIR, env, stdio: ['ignore', 'inherit', 'inherit'] });
  }
  for (const server of Object.values(SERVERS)) copyFileSync(join(root, 'bench', 'peer', server), join(PEER_DIR, server));
  const version = (name: string) => (JSON.parse(readFileSync(join(PEER_DIR, 'node_modules', '@event-driven-io', name, 'package.json'), 'utf8')) as { version: string }).version;
  const store = backend === 'postgres' ? 'emmett-postgresql' : 'emmett-sqlite';
  return `Emmett ${version('emmett')} + ${store} ${version(store)}`;
}

export function startPeer(dbFile: string, token: string): Promise<Server> {
  return spawnServer(join(PEER_DIR, SERVERS.embedded), { PEER_DB_FILE: dbFile, PEER_TOKEN: token });
}

export function startPgPeer(databaseUrl: string, token: string): Promise<Server> {
  return spawnServer(join(PEER_DIR, SERVERS.postgres), { PEER_DATABASE_URL: databaseUrl, PEER_TOKEN: token });
}
