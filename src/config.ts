import * as v from 'valibot';
import { parseRateLimit, type RateLimit } from './core/rateLimit.js';

/**
 * The operator contract (PRODUCT.md section 2): environment -> typed, validated Config.
 * This is the only module that reads process.env; everything else receives a Config.
 */

export type Role = 'api' | 'projector' | 'dispatcher';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  eventStoreUrl: string | null;
  mongoDbUrl: string | null;
  /** postgres://...: the PostgreSQL backend for everything (log, read models, Setup data, deliveries...). */
  databaseUrl: string | null;
  roles: Role[];
  /** Processes serving the API on the port (node:cluster) when this process has the api role. */
  apiProcesses: number;
  logLevel: string;
  /** 'pretty': readable lines (pino-pretty); 'json': one JSON object per line; 'auto': pretty on a terminal. */
  logFormat: 'json' | 'pretty' | 'auto';
  webhookRetryDelaysMs: number[];
  webhookTimeoutMs: number;
  webhookAllowPrivateTargets: boolean;
  /** Extra CA certificates (PEM file) trusted for webhook receivers, e.g. a test receiver's. */
  webhookCaFile: string | null;
  /** GET /metrics on the API port (METRICS=on; then protect it at the network). */
  metricsOnApi: boolean;
  /** A port on 127.0.0.1 serving only GET /metrics (METRICS_PORT), or null. */
  metricsPort: number | null;
  /** /health/ready fails when a projection's oldest unapplied event is older than this. */
  readyMaxLagMs: number;
  /** How often the reactors look whether the date (UTC) changed, to make their daily pass. */
  reactorDailyCheckMs: number;
  /**
   * The master key wrapping personal data's keys (docs/privacy.md); null: DATA_DIR/master.key, made
   * on first start, which only the embedded store allows (masterKeyRequired).
   */
  masterKeyFile: string | null;
  /** RATE_LIMIT_DEFAULT: the limit of every API key without its own; null: none (docs/sync-clients.md). */
  rateLimitDefault: RateLimit | null;
}

/**
 * True when the stores are servers that several processes (and machines, and recreated
 * containers) share. Each process would make its own DATA_DIR/master.key, and every key but the
 * first would open none of the shared data keys: there the key must be given, the same file to
 * every process (MASTER_KEY_FILE), never made. Another shared backend adds itself here.
 */
export function masterKeyRequired(config: Pick<Config, 'eventStoreUrl' | 'mongoDbUrl' | 'databaseUrl'>): boolean {
  return config.eventStoreUrl !== null || config.mongoDbUrl !== null || config.databaseUrl !== null;
}

/** The variables that chose the shared backend, for messages. */
function sharedBackendVariables(config: Pick<Config, 'eventStoreUrl' | 'mongoDbUrl' | 'databaseUrl'>): string {
  const set = { EVENTSTORE_URL: config.eventStoreUrl, MONGODB_URL: config.mongoDbUrl, DATABASE_URL: config.databaseUrl };
  return Object.entries(set).filter(([, value]) => value !== null).map(([name]) => name).join(' and ');
}

/** The start error when a shared backend has no master key given: checked before anything connects. */
export function assertMasterKeyGiven(config: Pick<Config, 'eventStoreUrl' | 'mongoDbUrl' | 'databaseUrl' | 'masterKeyFile'>): void {
  if (!masterKeyRequired(config) || config.masterKeyFile !== null) return;
  throw new Error(
    `invalid configuration: MASTER_KEY_FILE must be set with ${sharedBackendVariables(config)}: every process must use the same master key, so none may make its own; ` +
      'make one once (openssl rand -hex 32 > master.key), keep it safe and give that file to every process (docs/privacy.md)',
  );
}

const ROLES: readonly Role[] = ['api', 'projector', 'dispatcher'];

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "1m", "500ms", "12h" -> milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) throw new Error(`not a duration: "${text}" (use e.g. 500ms, 10s, 1m, 2h)`);
  return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
}

const PORT_MESSAGE = 'must be a port number from 0 to 65535 (0 picks a free one)';
const PortNumber = v.pipe(v.string(), v.regex(/^\d+$/, PORT_MESSAGE), v.check((text) => Number(text) <= 65535, PORT_MESSAGE));

const Env = v.object({
  PORT: v.optional(PortNumber, '8080'),
  HOST: v.optional(v.string(), '127.0.0.1'),
  DATA_DIR: v.optional(v.pipe(v.string(), v.minLength(1)), './data'),
  EVENTSTORE_URL: v.optional(v.string()),
  MONGODB_URL: v.optional(v.string()),
  DATABASE_URL: v.optional(v.pipe(v.string(), v.regex(/^postgres(ql)?:\/\//, 'must be a PostgreSQL URL (postgres://user:password@host:5432/database)'))),
  ROLES: v.optional(v.string(), 'api,projector,dispatcher'),
  API_PROCESSES: v.optional(v.pipe(v.string(), v.regex(/^[1-9]\d?$/, 'must be a whole number from 1 to 99')), '1'),
  LOG_LEVEL: v.optional(v.picklist(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'must be one of fatal, error, warn, info, debug, trace, silent'), 'info'),
  LOG_FORMAT: v.optional(v.picklist(['json', 'pretty'], 'must be json or pretty'), undefined),
  WEBHOOK_RETRY_DELAYS: v.optional(v.string(), '1m,5m,30m,2h,12h'),
  WEBHOOK_TIMEOUT: v.optional(v.string(), '10s'),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: v.optional(v.picklist(['true', 'false'], 'must be true or false'), 'false'),
  WEBHOOK_CA_FILE: v.optional(v.string()),
  METRICS: v.optional(v.picklist(['on', 'off'], 'must be on or off'), 'off'),
  METRICS_PORT: v.optional(PortNumber),
  READY_MAX_LAG: v.optional(v.string(), '30s'),
  REACTOR_DAILY_CHECK: v.optional(v.string(), '1m'),
  MASTER_KEY_FILE: v.optional(v.string()),
  RATE_LIMIT_DEFAULT: v.optional(v.string()),
});

/** A duration variable's value, or an error naming the variable and the accepted forms. */
function durationOf(variable: string, text: string): number {
  try {
    return parseDuration(text);
  } catch {
    throw new Error(`invalid configuration: ${variable} must be a duration such as 500ms, 10s, 1m or 2h (units ms, s, m, h, d), not "${text}"`);
  }
}

function rateLimitOf(variable: string, text: string): RateLimit {
  try {
    return parseRateLimit(text);
  } catch (error) {
    throw new Error(`invalid configuration: ${variable}: ${(error as Error).message}`);
  }
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = v.safeParse(Env, present);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    throw new Error(`invalid configuration: ${v.getDotPath(issue) ?? ''} ${issue.message}`.trim());
  }
  const e = parsed.output;
  const port = Number(e.PORT);
  const roles = e.ROLES.split(',').map((role) => role.trim()).filter(Boolean);
  for (const role of roles) {
    if (!ROLES.includes(role as Role)) throw new Error(`invalid configuration: unknown role "${role}" (use ${ROLES.join(', ')})`);
  }
  if (Boolean(e.EVENTSTORE_URL) !== Boolean(e.MONGODB_URL)) {
    throw new Error('invalid configuration: EVENTSTORE_URL and MONGODB_URL go together (set both for the production backends, neither for the embedded store)');
  }
  if (e.DATABASE_URL && (e.EVENTSTORE_URL || e.MONGODB_URL)) {
    throw new Error('invalid configuration: DATABASE_URL (PostgreSQL) and EVENTSTORE_URL/MONGODB_URL (EventStoreDB + MongoDB) choose different backends; set one of them');
  }
  const config: Config = {
    port,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    eventStoreUrl: e.EVENTSTORE_URL ?? null,
    mongoDbUrl: e.MONGODB_URL ?? null,
    databaseUrl: e.DATABASE_URL ?? null,
    roles: roles as Role[],
    apiProcesses: Number(e.API_PROCESSES),
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT ?? 'auto',
    webhookRetryDelaysMs: e.WEBHOOK_RETRY_DELAYS.split(',').map((text) => durationOf('WEBHOOK_RETRY_DELAYS', text)),
    webhookTimeoutMs: durationOf('WEBHOOK_TIMEOUT', e.WEBHOOK_TIMEOUT),
    webhookAllowPrivateTargets: e.WEBHOOK_ALLOW_PRIVATE_TARGETS === 'true',
    webhookCaFile: e.WEBHOOK_CA_FILE ?? null,
    metricsOnApi: e.METRICS === 'on',
    metricsPort: e.METRICS_PORT === undefined ? null : Number(e.METRICS_PORT),
    readyMaxLagMs: durationOf('READY_MAX_LAG', e.READY_MAX_LAG),
    reactorDailyCheckMs: durationOf('REACTOR_DAILY_CHECK', e.REACTOR_DAILY_CHECK),
    masterKeyFile: e.MASTER_KEY_FILE ?? null,
    rateLimitDefault: e.RATE_LIMIT_DEFAULT === undefined ? null : rateLimitOf('RATE_LIMIT_DEFAULT', e.RATE_LIMIT_DEFAULT),
  };
  assertMasterKeyGiven(config);
  return config;
}
