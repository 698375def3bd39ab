import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
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

/**
 * A POST whose body is sent in two halves, so that it is in flight while the server stops. Its
 * headers ask for a 100 Continue, which the server sends once it has read them: `arrived` settles
 * then, and the first half goes out (a connection the server has not read a request from yet is
 * idle, and a stop closes idle connections).
 */
async function slowPost(url: string, key: string) {
  const body = JSON.stringify({ name: 'In flight Inc', notes: 'x'.repeat(10_000) });
  const target = new URL('/api/v1/clients', url);
  const sending = request(target, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Expect: '100-continue' },
  });
  const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
    sending.once('response', (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.once('end', () => resolve({ status: response.statusCode!, body: text }));
    });
    sending.once('error', reject);
  });
  const arrived = once(sending, 'continue');
  sending.flushHeaders();
  await Promise.race([arrived, answered]);
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

/**
 * Whether a new TCP connection to the server is refused (a fresh socket each time: no pooled
 * keep-alive one). A connection the kernel queued for the listener just before the server closed
 * it is reset, not refused (ECONNRESET, seen in CI on Node 24): not refused yet, so a caller that
 * looks again (`within`) sees the refusals that follow.
 */
function refusesConnections(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED') resolve(true);
      else if (error.code === 'ECONNRESET') resolve(false);
      else reject(error);
    });
  });
}

/** Looks every 20 ms, for up to `ms`, until `condition` holds; answers whether it did. */
async function within(ms: number, condition: () => boolean | Promise<boolean>): Promise<boolean> {
  for (const deadline = Date.now() + ms; ; ) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('graceful stop', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('%s: new connections are refused at once, the request in flight is answered, exit code 0', async (signal) => {
    const { server, key } = await serverWithKey();
    const post = await slowPost(server.url, key);
    // 'close', not 'exit': the log is read below, and the process's pipes may still hold some of it at its exit.
    const exited = once(server.child, 'close');
    server.child.kill(signal);
    // Refused while the request in flight still waits for the rest of its body (the server cuts it
    // only after SHUTDOWN_DEADLINE_MS): looked for until then, not after a pause a slow machine may outlast.
    expect(await within(5_000, () => refusesConnections(server.url))).toBe(true);
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
    // npm's child may be reaped a moment after npm itself exits: looked for, not slept on.
    await within(10_000, () => processesWith(`DATA_DIR=${dataDir}`).length === 0);
    expect(processesWith(`DATA_DIR=${dataDir}`)).toEqual([]);
    expect(await refusesConnections(npm.url)).toBe(true);
    expect(port).not.toBe('');
  }, 150_000);
});
