/**
 * One condition of GET /health/ready. The composition gathers them (stores, projection lag, disk)
 * and any role adds its own (e.g. the webhook subscription's flag).
 */
export interface ReadinessCheck {
  name: string;
  /** null when ready, else why not (a sentence an operator can act on). */
  check(): Promise<string | null>;
}
