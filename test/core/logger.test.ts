import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loggerOptions } from '../../src/core/logger.js';

/** Logs never hold personal values at any level (issue 32 item 5), nor secrets. */

function capture(): { logger: pino.Logger; text: () => string } {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { logger: pino(loggerOptions('trace'), sink), text: () => text };
}

describe('logger', () => {
  it.each(['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const)('redacts personal values and record contents at %s', (level) => {
    const { logger, text } = capture();
    logger[level]({ email: 'ann@example.com', record: { id: 'r1', phone: '+1 555 0100' } }, 'one');
    logger[level]({ event: { fields: { firstName: 'Ann', custom: 'ann@example.com' }, changes: { notes: { from: 'x', to: 'secret note' } } } }, 'two');
    logger.child({ requestId: 'q' })[level]({ body: '{"email":"ann@example.com"}', data: { comment: 'call Ann' }, authorization: 'Bearer k' }, 'three');
    const out = text();
    expect(out.split('\n').filter(Boolean)).toHaveLength(3);
    for (const value of ['ann@example.com', '+1 555 0100', 'Ann', 'secret note', 'call Ann', 'Bearer k']) expect(out).not.toContain(value);
    expect(out).toContain('[redacted]');
  });
});
