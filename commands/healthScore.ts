import type { Actor, EventStore } from '../src/eventstore/port.js';
import { NotFound } from '../src/core/errors.js';
import { defaultObject } from '../src/schema/catalogue.js';
import { metadataFor, newAction } from './action.js';
import { executeRecordCommand } from './record/repository.js';

/**
 * Writes computed health scores (source `health score`): an update of `clients.healthScore` only,
 * decided like any update, so a score that did not change appends nothing. The field is read only
 * for the API (validation refuses it); this is the one writer.
 */

/** Its name and unique fields: the score changes neither, whatever a workspace added to clients. */
const CLIENTS = defaultObject('clients')!;

export const HEALTH_SCORE_ACTOR: Actor = { type: 'system', id: 'health-score', name: 'health score' };

export async function writeHealthScores(events: EventStore, workspaceId: string, scores: [clientId: string, score: number][]): Promise<void> {
  const metadata = metadataFor(newAction(workspaceId, HEALTH_SCORE_ACTOR, 'health score'), { clients: scores.length });
  // Side by side, so that the embedded store commits them together.
  await Promise.all(
    scores.map(async ([clientId, score]) => {
      try {
        await executeRecordCommand(
          events,
          CLIENTS,
          clientId,
          () => ({ type: 'UpdateRecord', workspaceId, object: 'clients', recordId: clientId, fields: { healthScore: score } }),
          metadata,
        );
      } catch (error) {
        if (!(error instanceof NotFound)) throw error; // a client deleted meanwhile has no score
      }
    }),
  );
}
