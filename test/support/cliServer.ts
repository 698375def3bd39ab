import { rmSync } from 'node:fs';
import type { Csr } from './cli.js';
import { spawnServer, type ServerProcess } from './process.js';
import { startReceiver, type Receiver } from './receiver.js';
import { client } from './service.js';

/**
 * What the `csr webhooks` suites stand on: a real HTTPS receiver, a server in its own process on
 * `dataDir`, and a workspace with an API key made through `csr` as an operator makes them.
 */
export interface CliServer {
  receiver: Receiver;
  server: ServerProcess;
  slug: string;
  api: ReturnType<typeof client>;
  close(): Promise<void>;
}

export async function startCliServer(csr: Csr, dataDir: string, env: Record<string, string>, name: string): Promise<CliServer> {
  const receiver = await startReceiver();
  const server = await spawnServer({ DATA_DIR: dataDir, LOG_LEVEL: 'info', ...env });
  const slug = `${name.toLowerCase()}-${Date.now()}`;
  await csr.json('workspaces', 'create', slug);
  const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', name);
  return {
    receiver,
    server,
    slug,
    api: client(server.url, key),
    async close() {
      await server.kill();
      await receiver.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
