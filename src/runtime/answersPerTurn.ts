/**
 * Answers leave together at the end of the event loop's poll phase instead of one by one as each
 * is ready. Every answer written to a client that is waiting for it wakes that client up, and
 * when the client is asleep (the server is the slower side) the wake-up costs the writing server
 * far more than the write: an inter-processor interrupt, paid inside the writev. Answers written
 * in one burst wake a client once; the others reach it while it is already running. Under light
 * load a turn holds one answer and nothing changes but one setImmediate; under load more answers
 * go out per unit of CPU and the wait is at most the rest of one turn (docs/performance-log.md,
 * "read lane 2").
 *
 * Only the moment an answer is handed to the HTTP server moves: a request is still handled,
 * logged and counted as before, and an error is handed on at once.
 */
export function answersPerTurn<A extends unknown[]>(fetch: (request: Request, ...rest: A) => Response | Promise<Response>) {
  let turn: Promise<void> | null = null;
  const endOfTurn = (): Promise<void> =>
    (turn ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        turn = null;
        resolve();
      }),
    ));
  // Not an async function: an answer made at once waits for the end of the turn only, without an
  // await of its own before that (a promise and a microtask turn fewer per request).
  const afterTurn = (response: Response): Promise<Response> => endOfTurn().then(() => response);
  return (request: Request, ...rest: A): Promise<Response> => {
    let answer: Response | Promise<Response>;
    try {
      answer = fetch(request, ...rest);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return answer instanceof Promise ? answer.then(afterTurn) : afterTurn(answer);
  };
}
