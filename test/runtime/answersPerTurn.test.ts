import { describe, expect, it } from 'vitest';
import { answersPerTurn } from '../../src/runtime/answersPerTurn.js';

/** Answers handed to the HTTP server together, at the end of the event loop's poll phase. */

const request = () => new Request('http://localhost/');

describe('answersPerTurn', () => {
  it('hands an answer on only after the callbacks already queued for this turn ran', async () => {
    const order: string[] = [];
    const answered = answersPerTurn(async () => new Response('a'))(request()).then(() => order.push('answer'));
    setImmediate(() => order.push('rest of the turn'));
    await answered;
    expect(order).toEqual(['rest of the turn', 'answer']);
  });

  it('hands on the answers of one turn together, in the order they were ready, with the arguments the server gave', async () => {
    const seen: unknown[] = [];
    const fetch = answersPerTurn(async (_request: Request, env: { id: number }) => {
      seen.push(env.id);
      return new Response(String(env.id));
    });
    const order: string[] = [];
    const all = [1, 2, 3].map((id) => fetch(request(), { id }).then(async (response) => order.push(await response.text())));
    let between = 0;
    setImmediate(() => (between = order.length));
    await Promise.all(all);
    expect(seen).toEqual([1, 2, 3]);
    expect(between).toBe(0);
    expect(order).toEqual(['1', '2', '3']);
  });

  it('starts a new turn for the answers of the next one', async () => {
    const fetch = answersPerTurn(async () => new Response('x'));
    await fetch(request());
    const order: string[] = [];
    const next = fetch(request()).then(() => order.push('answer'));
    setImmediate(() => order.push('rest of the turn'));
    await next;
    expect(order).toEqual(['rest of the turn', 'answer']);
  });

  it('hands on an error at once', async () => {
    const order: string[] = [];
    const failed = answersPerTurn(async () => {
      throw new Error('broken');
    })(request()).catch((error: Error) => order.push(error.message));
    setImmediate(() => order.push('rest of the turn'));
    await failed;
    expect(order).toEqual(['broken']);
  });
});
