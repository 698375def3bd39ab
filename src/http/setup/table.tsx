import type { Child } from 'hono/jsx';

/** A data table of the Setup page: column headers for screen readers, and a row saying when it is empty. */
export function Table(props: { columns: readonly string[]; empty?: string | undefined; children?: Child }) {
  return (
    <table>
      <thead>
        <tr>
          {props.columns.map((column) => (
            <th scope="col">{column}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {props.empty ? (
          <tr>
            <td colspan={props.columns.length}>{props.empty}</td>
          </tr>
        ) : null}
        {props.children}
      </tbody>
    </table>
  );
}
