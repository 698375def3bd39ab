import { createServer } from 'node:net';

/**
 * A TCP port that is free right now, on loopback (or on every interface with `host` null, for a
 * container that binds it on the host a moment later).
 */
export async function freePort(host: string | null = '127.0.0.1'): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    if (host === null) probe.listen(0, resolve);
    else probe.listen(0, host, resolve);
  });
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
