import type { Values } from '../src/readstore/port.js';
import { feedsRollups } from '../src/schema/calculated.js';
import { ValidationFailed } from '../src/core/errors.js';
import type { ObjectDef } from '../src/schema/types.js';
import { validateRecord } from '../src/schema/validate.js';
import { metadataFor, type Action } from './action.js';
import type { CommandDeps } from './deps.js';
import { assertIfMatch, type IfMatch } from './record/ifMatch.js';
import { executeRecordCommand } from './record/repository.js';
import { ReferenceResolver } from './references.js';

/** PATCH /api/v1/{object}/{id}: only the fields sent change (spec 4.4). */
export async function patchRecord(deps: CommandDeps, action: Action, object: ObjectDef, recordId: string, body: unknown, ifMatch?: IfMatch): Promise<void> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationFailed('the body must be an object of field keys to values');
  }
  if ('id' in body) throw new ValidationFailed('id cannot be set');
  const validated = validateRecord(object, body, 'update');
  if (!validated.ok) throw new ValidationFailed(validated.message);
  const resolved = await new ReferenceResolver(deps.readStore, action.workspaceId, deps.listUsers).resolve(validated.fields);
  if (!resolved.ok) throw new ValidationFailed(resolved.message);

  let before: Values | undefined;
  const position = await executeRecordCommand(
    deps.events,
    object,
    recordId,
    // decide checks the record's rules on the merged record, on every retry.
    (loaded) => {
      const { state } = loaded;
      assertIfMatch(ifMatch, loaded);
      before = state.status === 'live' ? state.fields : undefined;
      return { type: 'UpdateRecord', workspaceId: action.workspaceId, object: object.key, recordId, fields: resolved.values };
    },
    metadataFor(action, { [object.key]: 1 }),
  );
  if (position) await deps.waitVisible(position, feedsRollups(object.key, before, resolved.values) ? object.key : undefined);
}
