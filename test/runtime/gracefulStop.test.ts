import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer } from '../support/process.js';

/** SIGTERM and SIGINT: stop accepting at once, finish what is in flight, checkpoint, exit 0. */

async function serverWithKey() {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-stop-'));
  const csr = csrTool(dataDir);
  await csr.json('workspaces', 'create', 'stop');
  const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', 'stop', '--name', 'stopper');
  return { server: await spawnServer({ DATA_DIR: dataDir }), key };
}

/** A POST whose body is sent in two halves, so that it is in flight while the server stops. */
function slowPost(url: string, key: string) {
  const body = JSON.stringify({ name: 'In flight Inc', notes: 'x'.repeat(10_000) });
  const target = new URL('/api/v1/clients', url);
  const sending = request(target, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } });
  const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
    sending.once('response', (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.once('end', () => resolve({ status: response.statusCode!, body: text }));
    });
    sending.once('error', reject);
  });
  sending.write(body.slice(0, 5_000));
  return { answered, finish: () => sending.end(body.slice(5_000)) };
}

/** Pids of the processes whose environment holds `entry` (Linux /proc). */
function processesWith(entry: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(entry);
      } catch {
        return false; // gone meanwhile, or not ours to read
      }
    })
    .map(Number);
}

async function refusesConnections(url: string): Promise<boolean> {
  try {
    await fetch(new URL('/api/v1/clients', url));
    return false;
  } catch {
    return true;
  }
}

describe('graceful stop', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('%s: new connections are refused at once, the request in flight is answered, exit code 0', async (signal) => {
    const { server, key } = await serverWithKey();
    const post = slowPost(server.url, key);
    await new Promise((resolve) => setTimeout(resolve, 200)); // the request's headers have arrived
    const exited = once(server.child, 'exit');
    server.child.kill(signal);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await refusesConnections(server.url)).toBe(true);
    post.finish();
    const answer = await post.answered;
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.body)).toMatchObject({ created: 1 });
    const [code] = await exited;
    expect(code).toBe(0);
    expect(server.output()).toContain(`"signal":"${signal}"`);
  });

  // --ignore-scripts skips only the prestart build (the suite's setup built dist/, and building it
  // again would rewrite files under the test files running beside this one); the signal takes the
  // same way as with a plain `npm start`: npm -> sh -> exec'd node.
  it('SIGTERM to npm start stops the server too: nothing is left running', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'csr-npm-start-'));
    const npm = await spawnServer({ DATA_DIR: dataDir }, ['npm', 'start', '--silent', '--ignore-scripts'], 120_000);
    const port = new URL(npm.url).port;
    const exited = once(npm.child, 'exit');
    npm.child.kill('SIGTERM');
    await exited;
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await refusesConnections(npm.url)).toBe(true);
    expect(processesWith(`DATA_DIR=${dataDir}`)).toEqual([]);
    expect(port).not.toBe('');
  }, 150_000);
});
