import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { superviseThread } from '../core/supervisedThread.js';
import type { Stoppable } from '../core/supervisor.js';

/**
 * A background role (the projector, the dispatcher) in a worker thread of this process, the API
 * on the main thread. They need no more than that: they share no memory with the API, only the
 * stores. But a thread of its own gives a role another core, and the API's event loop no longer
 * pays for projecting and fanning out every event it appends. One thread per role, so that
 * fanning out a large upsert for webhooks does not hold up its projection, for which the request
 * waits (docs/performance.md has the figures). Each side hears of the others' commits at once
 * through the stores' file signals.
 *
 * The thread is supervised (`superviseThread`): one that cannot start stops the whole, one that
 * dies later is replaced.
 */
export function startBackgroundRole(config: Config, logger: Logger): Promise<Stoppable> {
  return superviseThread(`the ${config.roles.join()} thread`, new URL('./backgroundRoleThread.js', import.meta.url), config, logger);
}
