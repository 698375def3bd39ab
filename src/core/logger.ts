import pino, { type Logger } from 'pino';

/** One logger for the process; children add request id, workspace and key id. Secrets never reach it. */
export function createLogger(level: string, format: 'json' | 'pretty' | 'auto' = 'json'): Logger {
  const options = {
    level,
    base: { service: 'csr' },
    redact: { paths: ['secret', '*.secret', 'key', '*.key', 'authorization', '*.authorization'], censor: '[redacted]' },
  };
  // JSON for machines (a log collector reads stdout); readable lines for a person at a terminal.
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  if (!pretty) return pino(options);
  return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: process.stdout.isTTY === true, ignore: 'service,hostname', translateTime: 'SYS:HH:MM:ss.l' } } });
}
