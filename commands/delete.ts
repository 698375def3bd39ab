import type { Values } from '../src/readstore/port.js';
import { feedsRollups } from '../src/schema/calculated.js';
import { NotFound } from '../src/core/errors.js';
import type { ObjectDef } from '../src/schema/types.js';
import { metadataFor, type Action } from './action.js';
import type { CommandDeps } from './deps.js';
import { assertIfMatch, type IfMatch } from './record/ifMatch.js';
import { executeRecordCommand } from './record/repository.js';

/** DELETE /api/v1/{object}/{id}: the deletion event carries the record as last saved (PRODUCT.md). */
export async function deleteRecord(deps: CommandDeps, action: Action, object: ObjectDef, recordId: string, ifMatch?: IfMatch): Promise<void> {
  let before: Values | undefined;
  const position = await executeRecordCommand(
    deps.events,
    object,
    recordId,
    async (loaded) => {
      const { state, createdAt, updatedAt } = loaded;
      assertIfMatch(ifMatch, loaded);
      before = state.status === 'live' ? state.fields : undefined;
      const projected = await deps.readStore.get(action.workspaceId, object.key, recordId);
      if (!projected || !createdAt || !updatedAt) throw new NotFound(`${object.key} record ${recordId} not found`);
      return {
        type: 'DeleteRecord',
        workspaceId: action.workspaceId,
        object: object.key,
        recordId,
        lastSaved: { calculated: projected.calculated, createdAt: createdAt.toISOString(), updatedAt: updatedAt.toISOString() },
      };
    },
    metadataFor(action, { [object.key]: 1 }),
  );
  if (position) await deps.waitVisible(position, feedsRollups(object.key, before) ? object.key : undefined);
}
