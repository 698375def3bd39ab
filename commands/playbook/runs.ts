import { Conflict } from '../../src/core/errors.js';
import type { EventStore, StreamAppend } from '../../src/eventstore/port.js';
import { newId } from '../../src/core/ids.js';
import { metadataFor, type Action } from '../action.js';
import { derivedId } from '../derivedIds.js';

/**
 * The automation runs of a workspace: one event per run (fired or failed) on the workspace's runs
 * stream, listed by `csr automation runs`. A failure is recorded once per trigger: its entry is
 * appended with a claim on a stream of its own ("no stream yet"), so a replay records nothing.
 */

export const RUNS_STREAM_PREFIX = 'automationruns-';
const FAILURE_STREAM_PREFIX = 'automationfailure-';

export interface AutomationRun {
  at: string;
  status: 'fired' | 'failed';
  trigger: string;
  triggerKey: string;
  template: { id: string; name: string | null };
  client: { id: string; name: string | null };
  playbookId: string | null;
  reason: string | null;
}

export type RunEntry = Omit<AutomationRun, 'at'>;

export function runsStream(workspaceId: string): string {
  return `${RUNS_STREAM_PREFIX}${workspaceId}`;
}

export function runEntryAppend(action: Action, entry: RunEntry): StreamAppend {
  const type = entry.status === 'fired' ? 'AutomationRunFired' : 'AutomationRunFailed';
  return {
    stream: runsStream(action.workspaceId),
    events: [{ id: newId(), type, data: { schemaVersion: 1, workspaceId: action.workspaceId, ...entry }, metadata: metadataFor(action, {}) }],
    expectedRevision: 'any',
  };
}

export async function recordFailedRun(events: EventStore, action: Action, entry: RunEntry): Promise<void> {
  const claim: StreamAppend = {
    stream: `${FAILURE_STREAM_PREFIX}${derivedId(action.workspaceId, entry.triggerKey)}`,
    events: [{ id: newId(), type: 'AutomationFailureClaimed', data: { schemaVersion: 1, triggerKey: entry.triggerKey }, metadata: metadataFor(action, {}) }],
    expectedRevision: 'no_stream',
  };
  try {
    await events.appendThen(claim, [runEntryAppend(action, entry)]);
  } catch (error) {
    if (!(error instanceof Conflict)) throw error; // recorded before
  }
}

/** The newest runs first. */
export async function listRuns(events: EventStore, workspaceId: string, limit = 100): Promise<AutomationRun[]> {
  const recorded = await events.readStream(runsStream(workspaceId), { direction: 'backwards', maxCount: limit });
  return recorded.map((event) => {
    const { status, trigger, triggerKey, template, client, playbookId, reason } = event.data as unknown as AutomationRun;
    return { at: event.created.toISOString(), status, trigger, triggerKey, template, client, playbookId, reason };
  });
}
