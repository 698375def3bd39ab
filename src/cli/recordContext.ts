import pino from 'pino';
import { AutoNumbers } from '../../commands/autoNumbers.js';
import type { CommandDeps } from '../../commands/deps.js';
import { recordProjection } from '../../projections/recordProjection.js';
import { RECORDS_PROJECTION } from '../readstore/port.js';
import { startProjection, type RunningProjection } from '../../projections/runner.js';
import { Unavailable } from '../core/errors.js';
import type { Backends } from '../backends.js';
import { Catalogues } from '../setup/catalogues.js';

/**
 * What `csr` commands that write records (import, playbooks start) use: the same command code as
 * the API, on the same stores. A write answers once the records read model shows it; the tool
 * also projects while it runs (a second projector only replays no-ops on the embedded store, and
 * on MongoDB runs only while it holds the projector lease), so it works without a server too.
 */

export interface RecordContext {
  commands: CommandDeps;
  stop(): Promise<void>;
}

const VISIBILITY_TIMEOUT_MS = 60_000;

export function openRecordContext(backends: Backends): RecordContext {
  const logger = pino({ level: 'silent' });
  let running: RunningProjection | null = null;
  // The records projection names records by their workspace's catalogue (custom objects too).
  const catalogues = new Catalogues(backends.events);
  const projector = backends.whileSoleProjector(
    () => {
      running = startProjection({ events: backends.events, readStore: backends.readStore, logger }, recordProjection(catalogues));
    },
    async () => {
      await running?.stop();
      running = null;
    },
  );
  const commands: CommandDeps = {
    events: backends.events,
    readStore: backends.readStore,
    autoNumbers: new AutoNumbers(backends.events),
    listUsers: (workspaceId) => backends.setup.listUsers(workspaceId),
    async waitVisible(position) {
      if (!(await backends.readStore.waitForCheckpoint(RECORDS_PROJECTION, position, VISIBILITY_TIMEOUT_MS))) {
        throw new Unavailable('the change is recorded but the read models have not caught up yet; run the command again shortly');
      }
    },
  };
  return {
    commands,
    async stop() {
      await projector.stop();
      await catalogues.close();
    },
  };
}
