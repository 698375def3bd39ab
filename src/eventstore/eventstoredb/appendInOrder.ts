import type { AppendResult, ChainResult, StreamAppend } from '../port.js';

/**
 * `appendThen` on EventStoreDB 24, which has no multi-stream transaction: each append is atomic on
 * its own stream only. The first group's appends are sent one after another and each acknowledged
 * before the next; the dependents' groups then go concurrently, each in order, stopping at its
 * first failure and leaving the appends before it written. So a process that dies between two of
 * them leaves the earlier ones written (an auto number reserved without its record:
 * commands/numberAudit). Kept apart from index.ts so that tests run the very same order against a
 * store that follows the same one-stream rules (test/commands/numberAudit.test.ts).
 */
export async function appendInOrder(append: (part: StreamAppend) => Promise<AppendResult>, groups: StreamAppend[][]): Promise<ChainResult> {
  const inOrder = async (group: StreamAppend[]): Promise<AppendResult> => {
    let last!: AppendResult;
    for (const part of group) last = await append(part);
    return last;
  };
  const claimed = await inOrder(groups[0]!);
  const written = await Promise.allSettled(groups.slice(1).map(inOrder));
  return { first: claimed, then: written };
}
