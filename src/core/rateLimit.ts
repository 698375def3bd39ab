/**
 * A rate limit as operators write it (RATE_LIMIT_DEFAULT, `csr keys create|update --rate`):
 * `<requests>/<s|m|h>` and optionally `,burst=<requests>`, a token bucket that refills at that
 * rate and holds at most `burst` (default: the requests of one period). docs/sync-clients.md.
 */
export interface RateLimit {
  /** Tokens added per second. */
  perSecond: number;
  /** The bucket's size: requests that may come at once. */
  burst: number;
  /** As written, normalised (`100/s,burst=200`). */
  text: string;
}

const PERIOD_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };
const FORM = /^\s*(\d{1,9})\s*\/\s*(s|m|h)\s*(?:,\s*burst\s*=\s*(\d{1,9})\s*)?$/;

/** Throws an Error whose message says what is accepted. */
export function parseRateLimit(text: string): RateLimit {
  const match = FORM.exec(text);
  const requests = match ? Number(match[1]) : 0;
  const burst = match?.[3] === undefined ? requests : Number(match[3]);
  if (!match || requests < 1 || burst < 1) {
    throw new Error(`not a rate limit: "${text}" (use <requests>/<s|m|h> with an optional ,burst=<requests>, e.g. 100/s,burst=200 or 20/m)`);
  }
  const period = match[2]!;
  return { perSecond: requests / PERIOD_SECONDS[period]!, burst, text: `${requests}/${period}${match[3] === undefined ? '' : `,burst=${burst}`}` };
}
