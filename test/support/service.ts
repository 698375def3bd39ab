import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { createWebhookSender } from '../../src/backends.js';
import { startService, type RunningService } from '../../src/service.js';
import { fingerprint, generateApiKey } from '../../src/setup/apiKeys.js';
import type { ApiKey } from '../../src/setup/port.js';
import { WebhookSetup } from '../../src/webhooks/admin.js';
import { ObjectManager } from '../../src/setup/objects.js';
import { checkResponse } from './openapi.js';

/**
 * A real service (HTTP server, projector, embedded store) in this process, on a free loopback
 * port and a fresh data directory, plus helpers to set up workspaces and keys as `csr` would.
 */
export interface TestService {
  url: string;
  dataDir: string;
  service: RunningService;
  config: Config;
  /** Webhook Setup as `csr webhooks` runs it, on this service's stores. */
  webhooks: WebhookSetup;
  /** The Object Manager as `csr objects` / `csr fields` run it, on this service's stores. */
  objects: ObjectManager;
  workspace(slug?: string): Promise<TestWorkspace>;
  /** An API client (in process) with a read-write key of a new workspace. */
  workspaceClient(): Promise<ApiClient>;
  stop(): Promise<void>;
}

export interface TestWorkspace {
  id: string;
  slug: string;
  key(options?: { readOnly?: boolean; objects?: string[]; name?: string }): Promise<{ key: string; record: ApiKey }>;
  addUser(name: string, email: string): Promise<string>;
}

/** `clock`: the service's time (tests move it forward to reach 24 h or 30 day rules). */
export async function startTestService(env: Record<string, string> = {}, options: { clock?: () => Date; dataDir?: string } = {}): Promise<TestService> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'csr-test-'));
  const config: Config = loadConfig({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent', ...env });
  const clock = options.clock ?? (() => new Date());
  const service = await startService(config, pino({ level: 'silent' }), clock);
  const setup = service.backends.setup;
  const sender = createWebhookSender(config);
  const webhooks = new WebhookSetup({
    setup,
    webhooks: service.backends.webhooks,
    events: service.backends.events,
    sender,
    actor: { type: 'user', id: 'test', name: 'test' },
    retryDelaysMs: config.webhookRetryDelaysMs,
    allowPrivateTargets: config.webhookAllowPrivateTargets,
    clock,
  });
  const testService: TestService = {
    url: service.url!,
    dataDir,
    service,
    config,
    webhooks,
    objects: new ObjectManager({ setup, events: service.backends.events, actor: { type: 'user', id: 'test', name: 'csr' } }),
    async workspace(slug = `ws-${randomUUID().slice(0, 8)}`) {
      const id = randomUUID();
      await setup.createWorkspace({ id, slug, name: slug, createdAt: new Date().toISOString() });
      return {
        id,
        slug,
        async key(options = {}) {
          const key = generateApiKey();
          const record: ApiKey = {
            id: randomUUID(),
            workspaceId: id,
            name: options.name ?? 'test key',
            fingerprint: fingerprint(key),
            access: options.readOnly ? 'read-only' : 'read-write',
            objects: options.objects ?? 'all',
            createdAt: new Date().toISOString(),
            lastUsedAt: null,
            revokedAt: null,
          };
          await setup.createKey(record);
          return { key, record };
        },
        async addUser(name, email) {
          const userId = randomUUID();
          await setup.addUser({ id: userId, workspaceId: id, name, email, createdAt: new Date().toISOString() });
          return userId;
        },
      };
    },
    async workspaceClient() {
      return client(testService, (await (await testService.workspace()).key()).key);
    },
    async stop() {
      sender.close();
      await service.stop();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return testService;
}

/**
 * A tiny JSON client bound to one key and either a base URL (a real server, over HTTP) or a test
 * service, whose API it calls in process through `app.request`, as Hono's own tests do: no port,
 * no socket, the same routes, middleware and error mapping. Every answer is checked against
 * the service's OpenAPI description (./openapi.ts).
 */
export function client(target: string | Pick<TestService, 'service'>, key: string | null) {
  const send = (path: string, init: RequestInit): Promise<Response> => {
    if (typeof target === 'string') return fetch(`${target}${path}`, init);
    return Promise.resolve(target.service.app!.request(path, init));
  };
  const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await send(path, {
      method,
      headers: {
        ...(key === null ? {} : { Authorization: `Bearer ${key}` }),
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let json: any = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = { unparsable: text };
    }
    await checkResponse({ target, send }, key, method, path, response.status, json);
    return { status: response.status, body: json, headers: response.headers };
  };
  return {
    get: (path: string) => request('GET', path),
    post: (path: string, body: unknown, headers?: Record<string, string>) => request('POST', path, body, headers),
    patch: (path: string, body: unknown) => request('PATCH', path, body),
    delete: (path: string) => request('DELETE', path),
    /** A record's REST data, as GET /api/v1/{object}/{id} answers it. */
    record: async (object: string, id: string) => (await request('GET', `/api/v1/${object}/${id}`)).body.data,
    request,
  };
}

export type ApiClient = ReturnType<typeof client>;
