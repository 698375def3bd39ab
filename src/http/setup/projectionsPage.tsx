import type { Hono } from 'hono';
import type { SetupEnv, SetupPageDeps } from './deps.js';
import { Page, time } from './layout.js';
import { Table } from './table.js';

/** Projections, read only: the table of `csr projections status`. */
export function projectionRoutes(app: Hono<SetupEnv>, deps: SetupPageDeps): void {
  app.get('/projections', async (c) => {
    const rows = deps.projectionStatus ? await deps.projectionStatus() : null;
    return c.html(
      <Page title="Projections" section="/setup/projections" signedIn={c.get('signedIn')}>
        <p>Read only: rebuilds are an operator's command (csr projections rebuild).</p>
        {rows === null ? (
          <p>This server does not report projection status.</p>
        ) : (
          <Table columns={['Name', 'Kind', 'Version', 'Generation', 'State', 'Lag (events)', 'Lag (s)', 'Events/s', 'Last error']}>
            {rows.map((row) => (
              <tr>
                <td>{row.name}</td>
                <td>{row.kind}</td>
                <td>{row.version ?? '-'}</td>
                <td>{row.generation ?? '—'}</td>
                <td>{row.state}</td>
                <td>{row.lagEvents}</td>
                <td>{(row.lagMs / 1000).toFixed(1)}</td>
                <td>{row.eventsPerSecond}</td>
                <td>{row.lastError === null ? '—' : `${time(row.lastErrorAt)} ${row.lastError}`}</td>
              </tr>
            ))}
          </Table>
        )}
      </Page>,
    );
  });
}
