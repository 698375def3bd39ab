import pino, { type Logger } from 'pino';

/**
 * Personal values never reach a log at any level (docs/privacy.md): the personal fields of the
 * default objects by name, and whatever carries record values (fields, changes, bodies, payload
 * data), wherever a log call puts them at the top or one level down. Custom personal fields are
 * covered by the containers they travel in.
 */
const PERSONAL_KEYS = ['firstName', 'lastName', 'email', 'phone', 'notes', 'content', 'comment', 'fields', 'changes', 'body', 'rawBody', 'data', 'record', 'records'];
// `from` and `to` name positions and versions at the top of operators' lines; one level down they are a conversation's.
export const PERSONAL_LOG_PATHS = [...PERSONAL_KEYS.flatMap((key) => [key, `*.${key}`]), '*.from', '*.to'];

/** One logger for the process; children add request id, workspace and key id. Secrets never reach it. */
export function createLogger(level: string, format: 'json' | 'pretty' | 'auto' = 'json'): Logger {
  const options = loggerOptions(level);
  // JSON for machines (a log collector reads stdout); readable lines for a person at a terminal.
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  if (!pretty) return pino(options);
  return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: process.stdout.isTTY === true, ignore: 'service,hostname', translateTime: 'SYS:HH:MM:ss.l' } } });
}

export function loggerOptions(level: string) {
  return {
    level,
    base: { service: 'csr' },
    redact: { paths: ['secret', '*.secret', 'key', '*.key', 'authorization', '*.authorization', ...PERSONAL_LOG_PATHS], censor: '[redacted]' },
  };
}
