import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
// A dependency of the dev tools (openapi-typescript), used here only to read the compose file.
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { repoRoot } from '../support/process.js';

/**
 * docker-compose.yml and the Dockerfile, read against this service's config rules and the
 * documentation of EventStoreDB 24.10 and MongoDB 7. Nothing here starts a container: that is
 * `npm run test:containers` on a machine with Docker (.github/workflows/containers.yml). Where the
 * compose plugin is installed, `docker compose config -q` checks the file as Compose reads it.
 */

const run = promisify(execFile);
const text = (name: string) => readFileSync(join(repoRoot, name), 'utf8');

interface Service {
  environment?: Record<string, string>;
  secrets?: string[];
  ports?: string[];
  command?: string[];
  healthcheck?: { test: string[] };
  init?: boolean;
}
const compose = parse(text('docker-compose.yml'), { merge: true }) as { services: Record<string, Service>; secrets?: Record<string, { file?: string }> };
const APP_SERVICES = ['api', 'projector', 'dispatcher'];

/** Compose's interpolation of `${NAME:-default}` with nothing set in the shell: the defaults. */
function interpolated(environment: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(environment).map(([key, value]) => [key, value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1')]));
}

describe('docker-compose.yml, read', () => {
  it.each(APP_SERVICES)('%s: its environment is a configuration the service accepts (the master key given as a secret)', (name) => {
    const service = compose.services[name]!;
    const config = loadConfig(interpolated(service.environment ?? {}));
    expect(config.eventStoreUrl).not.toBeNull();
    expect(config.masterKeyFile).toBe('/run/secrets/master_key');
    expect(service.secrets).toContain('master_key');
  });

  it('declares the master key as a file secret, kept out of the image and out of git', () => {
    expect(compose.secrets?.master_key?.file).toBe('${MASTER_KEY_PATH:-./master.key}');
    expect(text('.dockerignore').split('\n')).toContain('master.key');
    expect(text('.gitignore').split('\n')).toContain('master.key');
  });

  it('EventStoreDB 24.10: a single insecure node with the documented variables, projections off, published on loopback only', () => {
    const eventstore = compose.services.eventstore!;
    // EventStoreDB 24.10 configuration: EVENTSTORE_<OPTION>; RunProjections takes None, System or All.
    expect(eventstore.environment).toMatchObject({ EVENTSTORE_CLUSTER_SIZE: '1', EVENTSTORE_INSECURE: 'true', EVENTSTORE_RUN_PROJECTIONS: 'None' });
    expect(eventstore.ports).toEqual(['127.0.0.1:2113:2113']);
    // Insecure: the client must not ask for TLS.
    for (const name of APP_SERVICES) expect(compose.services[name]!.environment!.EVENTSTORE_URL).toBe('esdb://eventstore:2113?tls=false');
  });

  it('MongoDB 7: the replica set the services name is the one the healthcheck initiates, with the host they reach', () => {
    const mongodb = compose.services.mongodb!;
    expect(mongodb.command).toEqual(['--replSet', 'rs0', '--bind_ip_all']);
    const initiate = mongodb.healthcheck!.test.join(' ');
    expect(initiate).toContain("rs.initiate({ _id: 'rs0', members: [{ _id: 0, host: 'mongodb:27017' }] })");
    expect(mongodb.ports).toEqual(['127.0.0.1:27017:27017']);
    for (const name of APP_SERVICES) expect(new URL(compose.services[name]!.environment!.MONGODB_URL!).searchParams.get('replicaSet')).toBe('rs0');
  });
});

describe('Dockerfile, read', () => {
  it('runs the service under an init that reaps (tini as the entrypoint of the final stage)', () => {
    const finalStage = text('Dockerfile').split(/^FROM /m).at(-1)!;
    expect(finalStage).toMatch(/apt-get install -y --no-install-recommends tini/);
    expect(finalStage).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
    expect(finalStage).toMatch(/^CMD \["node", "dist\/src\/main.js"\]$/m);
  });
});

async function composePlugin(): Promise<boolean> {
  try {
    await run('docker', ['compose', 'version'], { timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

const hasCompose = await composePlugin();
const SKIP_COMPOSE = 'skipped: no docker compose plugin (docker compose config -q on docker-compose.yml)';
if (!hasCompose) {
  if (process.env.CSR_REQUIRE_CONTAINERS === 'true') {
    describe('docker compose config', () => {
      it('finds the docker compose plugin', () => {
        throw new Error('CSR_REQUIRE_CONTAINERS=true but `docker compose` is not installed');
      });
    });
  } else {
    process.stdout.write(`${SKIP_COMPOSE}\n`);
  }
}

describe.skipIf(!hasCompose)('docker compose config', () => {
  it('accepts the file (no engine needed)', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'csr-compose-'));
    try {
      const key = join(folder, 'master.key');
      writeFileSync(key, `${'0'.repeat(64)}\n`, { mode: 0o600 });
      await expect(run('docker', ['compose', 'config', '-q'], { cwd: repoRoot, env: { ...process.env, MASTER_KEY_PATH: key }, timeout: 30_000 })).resolves.toBeDefined();
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
