import { todayUtc } from '../src/schema/dates.js';
import { automationReactor } from './automation/reactor.js';
import { lastDailyPass, recordDailyPass } from './dailyPass.js';
import { healthScoreReactor } from './health/reactor.js';
import type { Projection } from './projection.js';
import type { ReactorDeps } from './reactorDeps.js';
import { startProjection, type RunningProjection } from './runner.js';

/**
 * The reactors (ARCHITECTURE.md "Reactors"), run with the projections by the projector role:
 * playbook automation and the client health score, each on the projection runner with its own
 * checkpoint, plus their daily pass, made when they start and then whenever the clock's
 * date (UTC) changes, looked at every `dailyCheckMs`; a restart on a day that had its pass skips it.
 * "Changes" includes going back: a clock corrected backwards makes a pass as of the earlier date,
 * so the date-relative inputs (an overdue task) are scored against the corrected date at once.
 */

export interface ReactorRole extends ReactorDeps {
  listWorkspaceIds(): Promise<string[]>;
  dailyCheckMs: number;
}

export function reactorProjections(deps: ReactorDeps) {
  return [automationReactor(deps), healthScoreReactor(deps)];
}

export function startReactors(deps: ReactorRole, reactors = reactorProjections(deps)): RunningProjection {
  const running = reactors.map((reactor) => startProjection(deps, reactor as Projection));
  let lastPass: Promise<string | null> = lastDailyPass(deps.events).catch(() => null);
  let passing: Promise<void> = Promise.resolve();
  let stopped = false;

  const dailyPass = async () => {
    const today = todayUtc(deps.clock());
    if (stopped || today === (await lastPass)) return;
    for (const workspaceId of await deps.listWorkspaceIds()) {
      for (const reactor of reactors) {
        if (stopped) return;
        await reactor.sweep(workspaceId);
      }
    }
    await recordDailyPass(deps.events, today);
    lastPass = Promise.resolve(today);
  };
  const tick = () => {
    passing = passing.then(dailyPass).catch((error: unknown) => deps.logger.error({ err: error }, 'daily reactor pass failed; trying again'));
  };
  tick();
  const timer = setInterval(tick, deps.dailyCheckMs);
  timer.unref();

  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await passing;
      await Promise.all(running.map((projection) => projection.stop()));
    },
  };
}
