import { describe, expect, it } from 'vitest';
import { checkForwardTo, createLoopbackSender } from '../../src/webhooks/loopbackSender.js';

/** The forward address rule of `csr webhooks listen`: this machine's loopback only. */
describe('checkForwardTo', () => {
  it.each(['http://localhost:3000/hooks', 'https://localhost/hooks', 'http://127.0.0.1:8080/', 'http://[::1]:3000/x?y=1'])('accepts %s', (url) => {
    expect(checkForwardTo(url).ok).toBe(true);
  });

  it.each([
    ['http://localhost.evil.example/hooks', /must be on this machine/],
    ['http://127.0.0.2/hooks', /must be on this machine/],
    ['http://10.0.0.1/hooks', /must be on this machine/],
    ['http://user:pw@localhost/hooks', /user name or password/],
    ['file:///etc/passwd', /only http/],
    ['localhost:3000', /only http|not a URL/],
  ])('refuses %s', (url, reason) => {
    const checked = checkForwardTo(url);
    expect(checked.ok).toBe(false);
    expect(checked.ok ? '' : checked.reason).toMatch(reason);
  });

  it('the sender refuses what the rule refuses, without connecting', async () => {
    // A timeout far beyond a refused connection's answer: a process paused past it would find the
    // timeout due before the refusal and report 'no answer' instead.
    const sender = createLoopbackSender({ timeoutMs: 10_000 });
    expect(await sender.send('http://example.com/hooks', '{}', {})).toMatchObject({ ok: false, status: null, error: expect.stringMatching(/^address refused/) });
    expect(await sender.send('http://127.0.0.1:1/hooks', '{}', {})).toMatchObject({ ok: false, status: null, error: 'connection refused' });
  });
});
