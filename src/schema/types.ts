/**
 * The object catalogue's vocabulary: value formats of spec section 2.2 and object definitions
 * of section 2.3. Default objects live in ./defaultObjects.ts; workspace-defined ones use the
 * same shapes.
 */

export type FieldFormat =
  | { type: 'text' }
  /** `currency: 'USD'`: spec 2.2's "Number (USD)"; the value is a plain number either way. */
  | { type: 'number'; currency?: 'USD' }
  | { type: 'date' }
  | { type: 'dateTime' }
  | { type: 'boolean' }
  | { type: 'url' }
  | { type: 'email' }
  | { type: 'oneOf'; values: readonly string[] }
  | { type: 'autoNumber'; prefix: string }
  | { type: 'link'; object: string }
  | { type: 'linkList'; object: string }
  | { type: 'person' }
  | { type: 'files' }
  /** Computed by the service. timeDependent ones use the request's date and cannot be filtered. */
  | { type: 'calculated'; timeDependent: boolean }
  /** A value the service writes itself (the client health score): returned, never set through the API. */
  | { type: 'readOnlyNumber' };

export interface FieldDef {
  key: string;
  label: string;
  required: boolean;
  format: FieldFormat;
  /** Personal data (PRODUCT.md "Personal data and erasure"): a person's name, address, words. */
  personal?: boolean;
  /** Defined by the workspace (csr fields add), not by spec 2.3. */
  custom?: boolean;
}

export interface ObjectDef {
  /** Path key, e.g. `clients`, `opportunities`. */
  key: string;
  label: string;
  fields: readonly FieldDef[];
  /** Fields joined with a space (then trimmed) make the record name. */
  nameFields: readonly string[];
  /** Whether, without id or ?match=, a write finds its record by name (PRODUCT.md section 3). */
  matchByName: boolean;
  /** Defined by the workspace (csr objects create), not by spec 2.3. */
  custom?: boolean;
  /**
   * Workspace-defined fields that were deactivated: absent from the API, their values kept in
   * the log; a write naming one is refused with that reason.
   */
  inactiveFields?: readonly FieldDef[];
}
