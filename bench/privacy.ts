import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { treeCpuMs } from './cpu.js';
import { csr } from './http.js';
import { root, spawnServer, stop } from './servers.js';

/**
 * The privacy lane's costs (docs/privacy.md, docs/performance-log.md "privacy lane"): CPU per POST of
 * a contact (five personal fields sealed, a data key made) beside a client of the same size, in
 * the same run, in alternating rounds so that drift of the machine falls on both alike; then
 * `csr privacy erase` of a contact with 1,000 revisions. Run: `npm run build && node dist/bench/privacy.js`.
 */

const ROUNDS = Number(process.env['BENCH_PRIVACY_ROUNDS'] ?? 6);
// Rounds rotate which kind goes first, so drift of the machine falls on all alike.
const PER_ROUND = Number(process.env['BENCH_PRIVACY_RECORDS'] ?? 300);
const CONCURRENCY = 8;

const contactBody = (i: number) => ({ firstName: `Firstname${i}`, lastName: `Lastname${i}`, email: `person${i}@example.com`, phone: `+1 555 01${String(i).padStart(5, '0')}`, notes: 'met at the fair in spring' });
// A client carrying as many characters over as many fields (none personal).
const clientBody = (i: number) => ({ name: `Client name ${i} Lastname${i}`, website: `https://c${i}.example.com`, industry: 'Software', notes: `person${i}@example.com +1 555 01${String(i).padStart(5, '0')}`, tier: 'SMB' });

async function post(url: string, key: string, path: string, bodies: unknown[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      const response = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (response.status !== 201) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-privacy-'));
  csr(dataDir, 'workspaces', 'create', 'bench');
  const key = csr(dataDir, 'keys', 'create', '--workspace', 'bench', '--name', 'bench').key as string;
  // The same fields as a contact, none of them personal, on an object without reactors (clients have the health score).
  csr(dataDir, 'objects', 'create', '--workspace', 'bench', 'plainPeople', '--name', 'Plain people');
  for (const field of ['firstName', 'lastName', 'email', 'phone', 'notes']) csr(dataDir, 'fields', 'add', '--workspace', 'bench', 'plainPeople', field, '--format', 'text');
  // And the same object with those fields marked personal: the cost of sealing alone.
  csr(dataDir, 'objects', 'create', '--workspace', 'bench', 'sealedPeople', '--name', 'Sealed people');
  for (const field of ['firstName', 'lastName', 'email', 'phone', 'notes']) csr(dataDir, 'fields', 'add', '--workspace', 'bench', 'sealedPeople', field, '--format', 'text', '--personal');
  const server = await spawnServer('dist/src/main.js', { DATA_DIR: dataDir });
  try {
    const cpu = { contacts: 0, clients: 0, plainPeople: 0, sealedPeople: 0 };
    let n = 0;
    // One warm-up round of each, not counted.
    await post(server.url, key, '/api/v1/clients', Array.from({ length: 100 }, () => clientBody(n++)));
    await post(server.url, key, '/api/v1/contacts', Array.from({ length: 100 }, () => contactBody(n++)));
    for (let round = 0; round < ROUNDS; round++) {
      const kinds = ['contacts', 'clients', 'plainPeople', 'sealedPeople'] as const;
      for (const kind of [...kinds.slice(round % 4), ...kinds.slice(0, round % 4)]) {
        const bodies = Array.from({ length: PER_ROUND }, () => (kind === 'contacts' ? contactBody(n++) : kind === 'clients' ? clientBody(n++) : { name: `Plain ${n}`, ...contactBody(n++) }));
        const before = treeCpuMs(server.child.pid!)!;
        await post(server.url, key, `/api/v1/${kind}`, bodies);
        cpu[kind] += treeCpuMs(server.child.pid!)! - before;
      }
    }
    const count = ROUNDS * PER_ROUND;
    const contactUs = (cpu.contacts / count) * 1000;
    const clientUs = (cpu.clients / count) * 1000;
    const plainUs = (cpu.plainPeople / count) * 1000;
    const sealedUs = (cpu.sealedPeople / count) * 1000;
    console.log(
      `POST CPU per record (server process tree, ${count} each, ${ROUNDS} rotating rounds): contact ${contactUs.toFixed(0)} µs, client ${clientUs.toFixed(0)} µs, ` +
        `custom object with the contact's fields unmarked ${plainUs.toFixed(0)} µs; contact/client ${(contactUs / clientUs).toFixed(3)}, contact/unmarked ${(contactUs / plainUs).toFixed(3)}; ` +
        `the custom object marked personal ${sealedUs.toFixed(0)} µs, marked/unmarked ${(sealedUs / plainUs).toFixed(3)}`,
    );

    const created = await fetch(`${server.url}/api/v1/contacts`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(contactBody(n++)) });
    const id = ((await created.json()) as { ids: string[] }).ids[0]!;
    for (let i = 1; i < 1000; i++) {
      const response = await fetch(`${server.url}/api/v1/contacts/${id}`, { method: 'PATCH', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ notes: `revision ${i}`, phone: `+1 555 ${i}` }) });
      if (response.status !== 200) throw new Error(`PATCH: ${response.status}`);
    }
    const started = performance.now();
    const out = JSON.parse(execFileSync(process.execPath, ['bin/csr', 'privacy', 'erase', '--workspace', 'bench', '--contact', id, '--json'], { cwd: root, env: { ...process.env, DATA_DIR: dataDir }, encoding: 'utf8' }));
    const wall = performance.now() - started;
    const noop = performance.now();
    execFileSync(process.execPath, ['bin/csr', 'workspaces', 'list', '--json'], { cwd: root, env: { ...process.env, DATA_DIR: dataDir }, encoding: 'utf8' });
    const startup = performance.now() - noop;
    console.log(`csr privacy erase of a contact with 1,000 revisions: ${wall.toFixed(0)} ms wall (the command, server running), of which the erasure itself ${out.tookMs} ms; a csr command doing nothing (csr workspaces list) takes ${startup.toFixed(0)} ms`);
  } finally {
    await stop(server.child);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
