import pino, { type Logger } from 'pino';

/** One logger for the process; children add request id, workspace and key id. Secrets never reach it. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'csr' },
    redact: { paths: ['secret', '*.secret', 'key', '*.key', 'authorization', '*.authorization'], censor: '[redacted]' },
  });
}
