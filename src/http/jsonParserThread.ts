import { parentPort } from 'node:worker_threads';
import { parseProblem } from './jsonCost.js';
import type { ParseReply, ParseRequest } from './jsonParser.js';

/** The thread of `jsonParser.ts`: parses and checks each body it is sent, in order. */

const port = parentPort!;
port.on('message', ({ id, text }: ParseRequest) => {
  const parsed = parseProblem(text);
  port.postMessage(('problem' in parsed ? { id, problem: parsed.problem } : { id, value: parsed.value }) satisfies ParseReply);
});
