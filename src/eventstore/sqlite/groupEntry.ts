import type { RecordedEvent } from '../port.js';

/** An event of a persistent group on its way through it: queued, handed out, or waiting to retry. */
export interface Entry {
  seq: number;
  event: RecordedEvent;
  retryCount: number;
  holder: EntryHolder | undefined;
  /** Identifies the current hand-out; acks of an earlier hand-out are ignored. */
  token: object | undefined;
  /** Handed out again on an operator's request: it is behind the checkpoint, not outstanding. */
  replay: boolean;
}

/** The consumer holding an entry (groupConsumer.ts), as the group sees it. */
export interface EntryHolder {
  release(entry: Entry): void;
}

/** What a consumer needs of its group (persistentGroup.ts). */
export interface ConsumerHost {
  dispatch(): void;
  detach(consumer: object, held: Entry[]): void;
}
