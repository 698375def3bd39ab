/**
 * Idempotency keys (PRODUCT.md "Idempotency"): the first answer to a write sent with a key, kept
 * 24 hours, so that a retry gets it again instead of changing something twice. Shared by every
 * API process and kept across restarts. Every adapter passes test/contract/idempotency.contract.ts.
 */

/** A request's identity under a key: workspace, key, and a digest of method, path and body. */
export interface IdempotentRequest {
  workspaceId: string;
  key: string;
  fingerprint: string;
}

export interface StoredAnswer {
  status: number;
  body: string;
}

/**
 * - `run`: nobody holds the key (or its last holder's time ran out): this caller now holds it,
 *   runs the request and then calls `complete` or `release`.
 * - `replay`: the key's first answer, for the same request.
 * - `mismatch`: the key was used for another request.
 * - `running`: the same request is being run by another caller right now.
 */
export type Claim = { kind: 'run' } | { kind: 'replay'; answer: StoredAnswer } | { kind: 'mismatch' } | { kind: 'running' };

export interface ClaimOptions {
  now: Date;
  /** How long an answer is kept (24 h). */
  retainMs: number;
  /** How long a holder may run before another caller may take the key over (its process died). */
  leaseMs: number;
}

export interface IdempotencyStore {
  /** Atomic across processes: of two concurrent claims of a free key exactly one gets `run`. */
  claim(request: IdempotentRequest, options: ClaimOptions): Promise<Claim>;
  /** Stores the answer of a claimed key; from now on `claim` replays it. */
  complete(request: IdempotentRequest, answer: StoredAnswer): Promise<void>;
  /** Frees a claimed key without an answer (the request may be run again). */
  release(request: IdempotentRequest): Promise<void>;
  close(): Promise<void>;
}
