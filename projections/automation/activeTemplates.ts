import type { RecordedEvent } from '../../src/eventstore/port.js';
import type { Position } from '../../src/eventstore/position.js';
import type { Template } from './triggers.js';

export type Active = Template & { createdPosition: Position };

/** The object whose records are the templates. */
export const TEMPLATES_OBJECT = 'playbookTemplates';

/**
 * The active templates of each workspace, as the reactor last read them from the read model, read
 * again only after the log shows one of the workspace's templates changed (created, changed,
 * deleted or re-counted): a template is a record, so nothing changes it without an event the
 * reactor sees. Without this, every batch of client events read them again (a list statement per
 * batch, for the many workspaces that have none).
 */
export class ActiveTemplates {
  private readonly known = new Map<string, Active[]>();

  constructor(private readonly read: (workspaceId: string) => Promise<Active[]>) {}

  /** Forgets the workspaces whose templates `events` change; call with each batch before `of`. */
  saw(events: readonly RecordedEvent[]): void {
    for (const event of events) {
      if (event.data['object'] === TEMPLATES_OBJECT) this.known.delete(String(event.data['workspaceId']));
    }
  }

  async of(workspaceId: string): Promise<Active[]> {
    let active = this.known.get(workspaceId);
    if (!active) this.known.set(workspaceId, (active = await this.read(workspaceId)));
    return active;
  }
}
