import type { Hono } from 'hono';
import type { ReadinessCheck } from '../core/readiness.js';
import { notAllowed } from './errors.js';
import type { AppEnv } from './types.js';

/**
 * GET /health/live (the process answers) and GET /health/ready (every readiness check passes),
 * without authentication, for load balancers and orchestrators. Checks come from the composition
 * (stores, projection lag, disk, and any role's own flag, e.g. the webhook subscription).
 */

const CHECK_TIMEOUT_MS = 2_000;

async function run(check: ReadinessCheck): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => (timer = setTimeout(resolve, CHECK_TIMEOUT_MS, `no answer within ${CHECK_TIMEOUT_MS} ms`)));
  try {
    return await Promise.race([check.check(), timeout]);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(app: Hono<AppEnv>, checks: readonly ReadinessCheck[]): void {
  app.get('/health/live', (c) => c.json({ status: 'live' }));
  app.get('/health/ready', async (c) => {
    const outcomes = await Promise.all(checks.map(async (check) => [check.name, await run(check)] as const));
    const failing = outcomes.filter(([, reason]) => reason !== null);
    const report = Object.fromEntries(outcomes.map(([name, reason]) => [name, reason ?? 'ok']));
    if (failing.length === 0) return c.json({ status: 'ready', checks: report });
    const message = `not ready: ${failing.map(([name, reason]) => `${name}: ${reason}`).join('; ')}`;
    return c.json({ status: 'not ready', checks: report, error: { status: 503, message } }, 503);
  });
  app.all('/health/live', notAllowed('GET'));
  app.all('/health/ready', notAllowed('GET'));
}
