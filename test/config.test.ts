import { describe, expect, it } from 'vitest';
import { loadConfig, parseDuration } from '../src/config.js';

/** The operator contract (PRODUCT.md section 2) as loadConfig reads it. */

describe('loadConfig', () => {
  it('runs everything in one process on the embedded store when nothing is set', () => {
    expect(loadConfig({})).toEqual({
      port: 8080,
      host: '127.0.0.1',
      dataDir: './data',
      eventStoreUrl: null,
      databaseUrl: null,
      mongoDbUrl: null,
      rateLimitDefault: null,
      roles: ['api', 'projector', 'dispatcher'],
      apiProcesses: 1,
      logLevel: 'info',
      webhookRetryDelaysMs: [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000],
      webhookTimeoutMs: 10_000,
      webhookAllowPrivateTargets: false,
      webhookCaFile: null,
      logFormat: 'auto',
      metricsOnApi: false,
      metricsPort: null,
      readyMaxLagMs: 30_000,
      reactorDailyCheckMs: 60_000,
      masterKeyFile: null,
    });
  });

  it('reads REACTOR_DAILY_CHECK as a duration', () => {
    expect(loadConfig({ REACTOR_DAILY_CHECK: '50ms' }).reactorDailyCheckMs).toBe(50);
    expect(() => loadConfig({ REACTOR_DAILY_CHECK: 'daily' })).toThrow('REACTOR_DAILY_CHECK must be a duration');
  });

  it('reads DATABASE_URL (postgres:// or postgresql://) as the PostgreSQL backend', () => {
    expect(loadConfig({ DATABASE_URL: 'postgresql://csr@db:5432/csr', MASTER_KEY_FILE: '/run/secrets/master_key' }).databaseUrl).toBe('postgresql://csr@db:5432/csr');
    expect(loadConfig({}).databaseUrl).toBeNull();
  });

  it('reads API_PROCESSES, ROLES and durations', () => {
    const config = loadConfig({ API_PROCESSES: '4', ROLES: 'api, projector', WEBHOOK_RETRY_DELAYS: '500ms,2s', WEBHOOK_TIMEOUT: '1.5s' });
    expect(config.apiProcesses).toBe(4);
    expect(config.roles).toEqual(['api', 'projector']);
    expect(config.webhookRetryDelaysMs).toEqual([500, 2000]);
    expect(config.webhookTimeoutMs).toBe(1500);
  });

  it.each([
    [{ API_PROCESSES: '0' }, 'invalid configuration: API_PROCESSES must be a whole number from 1 to 99'],
    [{ API_PROCESSES: 'two' }, 'invalid configuration: API_PROCESSES must be a whole number from 1 to 99'],
    [{ API_PROCESSES: '100' }, 'invalid configuration: API_PROCESSES must be a whole number from 1 to 99'],
    [{ ROLES: 'api,cron' }, 'invalid configuration: unknown role "cron" (use api, projector, dispatcher)'],
    [{ PORT: '70000' }, 'invalid configuration: PORT must be a port number from 0 to 65535 (0 picks a free one)'],
    [{ PORT: 'http' }, 'invalid configuration: PORT must be a port number from 0 to 65535 (0 picks a free one)'],
    [{ LOG_LEVEL: 'loud' }, 'invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent'],
    [{ LOG_FORMAT: 'xml' }, 'invalid configuration: LOG_FORMAT must be json or pretty'],
    [{ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'yes' }, 'invalid configuration: WEBHOOK_ALLOW_PRIVATE_TARGETS must be true or false'],
    [
      { EVENTSTORE_URL: 'esdb://localhost:2113?tls=false' },
      'invalid configuration: EVENTSTORE_URL and MONGODB_URL go together (set both for the production backends, neither for the embedded store)',
    ],
    [{ DATABASE_URL: 'mysql://localhost/csr' }, 'invalid configuration: DATABASE_URL must be a PostgreSQL URL (postgres://user:password@host:5432/database)'],
    [
      { DATABASE_URL: 'postgres://localhost/csr', EVENTSTORE_URL: 'esdb://localhost:2113?tls=false', MONGODB_URL: 'mongodb://localhost/csr' },
      'invalid configuration: DATABASE_URL (PostgreSQL) and EVENTSTORE_URL/MONGODB_URL (EventStoreDB + MongoDB) choose different backends; set one of them',
    ],
    [
      { WEBHOOK_TIMEOUT: 'soon' },
      'invalid configuration: WEBHOOK_TIMEOUT must be a duration such as 500ms, 10s, 1m or 2h (units ms, s, m, h, d), not "soon"',
    ],
    [{ METRICS: 'maybe' }, 'invalid configuration: METRICS must be on or off'],
    [{ METRICS_PORT: 'abc' }, 'invalid configuration: METRICS_PORT must be a port number from 0 to 65535 (0 picks a free one)'],
    [{ METRICS_PORT: '70000' }, 'invalid configuration: METRICS_PORT must be a port number from 0 to 65535 (0 picks a free one)'],
    [{ READY_MAX_LAG: 'soon' }, 'invalid configuration: READY_MAX_LAG must be a duration such as 500ms, 10s, 1m or 2h (units ms, s, m, h, d), not "soon"'],
    [{ REACTOR_DAILY_CHECK: '0' }, 'invalid configuration: REACTOR_DAILY_CHECK must be a duration such as 500ms, 10s, 1m or 2h (units ms, s, m, h, d), not "0"'],
    [
      { WEBHOOK_RETRY_DELAYS: '1m,later' },
      'invalid configuration: WEBHOOK_RETRY_DELAYS must be a duration such as 500ms, 10s, 1m or 2h (units ms, s, m, h, d), not "later"',
    ],
  ])('refuses %j with one line that says what to do', (env, message) => {
    expect(() => loadConfig(env)).toThrow(new Error(message));
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
