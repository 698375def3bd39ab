import { describe, expect, it } from 'vitest';
import { announcementPayload, kindOf, mayMatch, parseAnnouncement, payloadSeq } from '../../src/eventstore/postgres/announcement.js';
import { Notifier } from '../../src/eventstore/postgres/notifier.js';
import type { Pool } from '../../src/postgres/pool.js';

/** A notifier that never connects: wakes are given by hand (announce, notify). */
function notifier(): Notifier {
  return new Notifier({ options: {} } as unknown as Pool);
}

const WORKSPACES = { streamPrefixes: ['workspace-'] };

describe('PostgreSQL append announcements (what a NOTIFY tells a filtered follower)', () => {
  it('a payload carries the head before and after and the kinds of the streams written; a bare seq carries none', () => {
    const payload = announcementPayload({ from: 7, to: 10, kinds: ['record-', 'claim-'] });
    expect(payload).toBe('10:7:["record-","claim-"]');
    expect(parseAnnouncement(payload)).toEqual({ from: 7, to: 10, kinds: ['record-', 'claim-'] });
    expect(payloadSeq(payload)).toBe(10);
    expect(parseAnnouncement('10')).toBeNull();
    expect(payloadSeq('10')).toBe(10);
    expect(parseAnnouncement('')).toBeNull();
    expect(payloadSeq('')).toBeNull();
    expect(announcementPayload({ from: 1, to: 2, kinds: Array.from({ length: 40 }, (_, i) => `k${i}-`) })).toBe('2');
  });

  it('a kind is the name up to its first dash; a filter may match it when either starts with the other', () => {
    expect(kindOf('record-0190-abc')).toBe('record-');
    expect(kindOf('nodash')).toBe('nodash');
    expect(mayMatch(WORKSPACES, ['record-', 'autonumber-'])).toBe(false);
    expect(mayMatch(WORKSPACES, ['workspace-'])).toBe(true);
    expect(mayMatch({ streamPrefixes: ['workspace-acme'] }, ['workspace-'])).toBe(true);
    expect(mayMatch({ streamPrefixes: ['work'] }, ['workspace-'])).toBe(true);
    expect(mayMatch({ streamPrefixes: ['workspace-'] }, ['workspace'])).toBe(true);
  });

  it('passes a follower over appends that continue from its cursor and hold nothing it wants', () => {
    const n = notifier();
    const at = n.generation;
    n.announce({ from: 5, to: 8, kinds: ['record-'] });
    // A group's settle wakes the followers too, but adds nothing to the log.
    n.nudge();
    n.announce({ from: 8, to: 9, kinds: ['record-', 'claim-'] });
    expect(n.passOver(at, '5', WORKSPACES)).toEqual({ cursor: '9', generation: n.generation });
    // Already past some of them: those are skipped, the rest must still chain.
    expect(n.passOver(at, '8', WORKSPACES)).toEqual({ cursor: '9', generation: n.generation });
  });

  it('reads instead when an append may hold a wanted event, leaves a gap, or came without an announcement, or on a poll', () => {
    const wanted = notifier();
    const a = wanted.generation;
    wanted.announce({ from: 5, to: 6, kinds: ['workspace-'] });
    expect(wanted.passOver(a, '5', WORKSPACES)).toBeUndefined();

    const gap = notifier();
    const b = gap.generation;
    // Seq 6 was committed by a transaction whose announcement this process has not had.
    gap.announce({ from: 6, to: 8, kinds: ['record-'] });
    expect(gap.passOver(b, '5', WORKSPACES)).toBeUndefined();

    const unknown = notifier();
    const c = unknown.generation;
    unknown.announce({ from: 5, to: 6, kinds: ['record-'] });
    unknown.notify();
    expect(unknown.passOver(c, '5', WORKSPACES)).toBeUndefined();

    const poll = notifier();
    expect(poll.passOver(poll.generation, '5', WORKSPACES)).toBeUndefined();
  });

  it('reads when the wakes since its generation are no longer remembered', () => {
    const n = notifier();
    const at = n.generation;
    let seq = 5;
    for (let i = 0; i < 300; i++) n.announce({ from: seq, to: ++seq, kinds: ['record-'] });
    expect(n.passOver(at, '5', WORKSPACES)).toBeUndefined();
    expect(n.passOver(n.generation - 10, String(seq - 10), WORKSPACES)).toEqual({ cursor: String(seq), generation: n.generation });
  });
});
