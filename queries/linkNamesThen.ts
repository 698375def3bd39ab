import { recordStream } from '../src/events/records.js';
import type { EventStore, RecordedEvent } from '../src/eventstore/port.js';
import { comparePositions, type Position } from '../src/eventstore/position.js';
import type { ObjectDef } from '../src/schema/types.js';
import { RecordFold } from './fold.js';

/**
 * The names linked records had at given moments of the log (history entries name a link as it was
 * when the change was made, not as it is now). Each linked record's stream is read once and folded
 * forwards through the moments, which come in log order.
 */

export interface LinkNamesThen {
  /** The name of `object` record `id` just after the event at `moments[index]`; null when it was not a live record then. */
  name(index: number, object: string, id: string): string | null;
}

export async function linkNamesThen(
  deps: { events: EventStore; workspaceId: string; objectOf: (object: string) => ObjectDef | undefined },
  links: Map<string, Set<string>>,
  moments: Position[],
): Promise<LinkNamesThen> {
  const names = new Map<string, (string | null)[]>();
  const tasks: Promise<void>[] = [];
  for (const [object, ids] of links) {
    for (const id of ids) {
      tasks.push(
        deps.events.readStream(recordStream(id)).then((stream) => {
          names.set(`${object}/${id}`, namesAlong(stream, moments, (fold) => {
            const document = fold.result(deps.objectOf).document;
            return document && document.workspaceId === deps.workspaceId && document.object === object ? document.name : null;
          }));
        }),
      );
    }
  }
  await Promise.all(tasks);
  return { name: (index, object, id) => names.get(`${object}/${id}`)?.[index] ?? null };
}

function namesAlong(stream: RecordedEvent[], moments: Position[], nameOf: (fold: RecordFold) => string | null): (string | null)[] {
  const fold = new RecordFold();
  const answer: (string | null)[] = [];
  let next = 0;
  let folded = -1;
  for (const moment of moments) {
    while (next < stream.length && comparePositions(stream[next]!.position, moment) <= 0) fold.add(stream[next++]!);
    // Only fold into a name again when an event was added since the last moment.
    answer.push(next === folded && answer.length > 0 ? answer.at(-1)! : nameOf(fold));
    folded = next;
  }
  return answer;
}
