import { upcast } from '../../src/events/records.js';
import { todayUtc } from '../../src/schema/dates.js';
import { comparePositions } from '../../src/eventstore/position.js';
import type { ReadStore } from '../../src/readstore/port.js';
import { awaitRecords, Serial } from '../awaitRecords.js';
import { backgroundReactor } from '../backgroundReactor.js';
import { findAllDocuments } from '../health/inputs.js';
import type { ReactorDeps } from '../reactorDeps.js';
import { followerOf, type Follower, type Projection } from '../projection.js';
import { ActiveTemplates, TEMPLATES_OBJECT, type Active } from './activeTemplates.js';
import { dateTrigger, templateOf, triggersFor, TRIGGERS, type Trigger } from './triggers.js';

/**
 * Playbook rules (source `automation`): a reactor over record events that fires the active
 * playbook templates of a client's creation, field changes and dates, plus a daily pass for the
 * date triggers. Each firing writes records with ids derived from its trigger key, so a replayed
 * batch (a crash before the checkpoint) or a second process fires nothing twice.
 */

export const AUTOMATION_REACTOR = 'automation';
/** Its entry in the registry of followers (projections/registry.ts): name, kind, version. */
export const AUTOMATION_FOLLOWER: Follower = followerOf(backgroundReactor(AUTOMATION_REACTOR, 1));

export interface AutomationReactor extends Projection {
  /** The daily pass: every date trigger due today for every client of the workspace. */
  sweep(workspaceId: string): Promise<void>;
}

async function activeTemplates(readStore: ReadStore, workspaceId: string): Promise<Active[]> {
  const documents = await findAllDocuments(readStore, workspaceId, TEMPLATES_OBJECT, [{ field: 'active', value: 'true' }]);
  return documents.map((document) => ({ ...templateOf(document.id, document.fields), createdPosition: document.createdPosition }));
}

export function automationReactor(deps: ReactorDeps): AutomationReactor {
  const logger = deps.logger.child({ reactor: AUTOMATION_REACTOR });
  const serial = new Serial();
  const templates = new ActiveTemplates((workspaceId) => activeTemplates(deps.readStore, workspaceId));

  const fire = async (workspaceId: string, trigger: Trigger, today: string) => {
    const result = await deps.fire({ workspaceId, ...trigger, startDate: today });
    if (result.status === 'failed') logger.warn({ workspaceId, triggerKey: trigger.triggerKey, reason: result.reason }, 'automation run failed');
  };

  return {
    ...backgroundReactor(AUTOMATION_REACTOR, AUTOMATION_FOLLOWER.version!),
    react(events, stopped) {
      return serial.run(async () => {
        templates.saw(events);
        const clientEvents = events.filter((event) => event.data['object'] === 'clients');
        if (clientEvents.length === 0) return;
        // A stop ends the wait: the records projection may be stopping too (the batch is read again at the next start).
        await awaitRecords(deps.readStore, clientEvents.at(-1)!.position, stopped);
        const today = todayUtc(deps.clock());
        for (const event of clientEvents) {
          const recordEvent = upcast(event);
          if (!recordEvent) continue;
          const { workspaceId } = recordEvent.data;
          const active = await templates.of(workspaceId);
          // A template made after the event (seen when catching up) does not react to it.
          const existing = active.filter((template) => comparePositions(template.createdPosition, event.position) < 0);
          for (const trigger of triggersFor(recordEvent, event.revision, existing, today)) await fire(workspaceId, trigger, today);
        }
      });
    },
    sweep(workspaceId) {
      return serial.run(async () => {
        const templates = (await activeTemplates(deps.readStore, workspaceId)).filter((template) => template.triggerType === TRIGGERS.date);
        if (templates.length === 0) return;
        const today = todayUtc(deps.clock());
        for (const client of await findAllDocuments(deps.readStore, workspaceId, 'clients', [])) {
          for (const template of templates) {
            const trigger = dateTrigger(template, client.id, client.fields[template.triggerField!], today);
            if (trigger) await fire(workspaceId, trigger, today);
          }
        }
      });
    },
  };
}
