import { describe, expect, it } from 'vitest';
import { loadConfig, parseDuration } from '../../src/config.js';

/** The operator contract (PRODUCT.md section 2) as loadConfig reads it. */

describe('loadConfig', () => {
  it('runs everything in one process on the embedded store when nothing is set', () => {
    expect(loadConfig({})).toEqual({
      port: 8080,
      host: '127.0.0.1',
      dataDir: './data',
      eventStoreUrl: null,
      mongoDbUrl: null,
      roles: ['api', 'projector', 'dispatcher'],
      apiProcesses: 1,
      logLevel: 'info',
      webhookRetryDelaysMs: [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000],
      webhookTimeoutMs: 10_000,
      webhookAllowPrivateTargets: false,
      webhookCaFile: null,
    });
  });

  it('reads API_PROCESSES, ROLES and durations', () => {
    const config = loadConfig({ API_PROCESSES: '4', ROLES: 'api, projector', WEBHOOK_RETRY_DELAYS: '500ms,2s', WEBHOOK_TIMEOUT: '1.5s' });
    expect(config.apiProcesses).toBe(4);
    expect(config.roles).toEqual(['api', 'projector']);
    expect(config.webhookRetryDelaysMs).toEqual([500, 2000]);
    expect(config.webhookTimeoutMs).toBe(1500);
  });

  it.each([
    [{ API_PROCESSES: '0' }, 'API_PROCESSES must be a whole number from 1 to 99'],
    [{ API_PROCESSES: 'two' }, 'API_PROCESSES must be a whole number from 1 to 99'],
    [{ API_PROCESSES: '100' }, 'API_PROCESSES must be a whole number from 1 to 99'],
    [{ ROLES: 'api,cron' }, 'unknown role "cron"'],
    [{ PORT: '70000' }, 'PORT must be at most 65535'],
    [{ PORT: 'http' }, 'PORT must be a port number'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ EVENTSTORE_URL: 'esdb://localhost:2113?tls=false' }, 'EVENTSTORE_URL and MONGODB_URL go together'],
    [{ WEBHOOK_TIMEOUT: 'soon' }, 'not a duration: "soon"'],
  ])('refuses %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['10s', 10_000],
    ['1m', 60_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
  ])('%s is %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
});
