import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/**
 * Checks HTTP answers against the service's own OpenAPI description (GET /api/v1/openapi.json
 * with the same key): every answer of the HTTP tests goes through `checkResponse`, so the
 * description cannot drift from the behaviour. A document is fetched once per (server, key) and
 * fetched again when an answer does not fit it, since the workspace's schema may have changed
 * since (a field added by the test); an answer that fits neither throws.
 */

type Json = Record<string, any>;

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

interface Described {
  document: Json | null;
  ajv: Ajv2020;
  compiled: Map<string, ValidateFunction>;
  templates: { template: string; pattern: RegExp }[];
}

/** Where answers come from: `send` reaches the service; `target` names it (one cache per target and key). */
export interface Origin {
  target: unknown;
  send(path: string, init: RequestInit): Promise<Response>;
}

const described = new Map<unknown, Map<string | null, Promise<Described>>>();
const ERROR_POINTER = '#/components/schemas/Error';
const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  additionalProperties: false,
  properties: {
    error: { type: 'object', required: ['status', 'message'], additionalProperties: false, properties: { status: { type: 'integer' }, message: { type: 'string' } } },
  },
};

function newAjv(document: Json | null): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: false });
  addFormats(ajv);
  ajv.addSchema(document ?? { components: { schemas: { Error: ERROR_SCHEMA } } }, 'openapi');
  return ajv;
}

async function describe(origin: Origin, key: string | null): Promise<Described> {
  let document: Json | null = null;
  if (key !== null) {
    const response = await origin.send('/api/v1/openapi.json', { method: 'GET', headers: { Authorization: `Bearer ${key}` } });
    if (response.status === 200) document = (await response.json()) as Json;
    else await response.arrayBuffer();
  }
  const templates = Object.keys(document?.['paths'] ?? {}).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));
  return { document, ajv: newAjv(document), compiled: new Map(), templates };
}

function documentFor(origin: Origin, key: string | null, fresh: boolean): Promise<Described> {
  let byKey = described.get(origin.target);
  if (!byKey) described.set(origin.target, (byKey = new Map()));
  let found = byKey.get(key);
  if (!found || fresh) {
    found = describe(origin, key);
    byKey.set(key, found);
  }
  return found;
}

function validator(doc: Described, pointer: string, schema: unknown): ValidateFunction {
  let compiled = doc.compiled.get(pointer);
  if (!compiled) {
    const rewritten = JSON.parse(JSON.stringify(schema).replaceAll('"#/components', '"openapi#/components')) as Json;
    compiled = doc.ajv.compile(rewritten);
    doc.compiled.set(pointer, compiled);
  }
  return compiled;
}

/** The problem with an answer, or null when the description allows it. */
function problemWith(doc: Described, method: string, path: string, status: number, body: unknown): string | null {
  const pathname = path.split('?')[0]!;
  const template = doc.templates.find((candidate) => candidate.pattern.test(pathname))?.template;
  const operation: Json | undefined = template ? doc.document!['paths'][template][method.toLowerCase()] : undefined;
  let response: Json | undefined = operation?.['responses']?.[String(status)] ?? operation?.['responses']?.[`${String(status)[0]}XX`];
  if (response?.['$ref']) response = doc.document!['components']['responses'][String(response['$ref']).split('/').pop()!];
  let schema: unknown = response?.['content']?.['application/json']?.['schema'];
  let pointer = `${template} ${method} ${status}`;
  if (!response) {
    // Not an operation of the description (an unknown path, a method answered 405, an object the
    // key cannot reach): only an error may come back, in the Error body.
    if (status < 400) return `${method} ${pathname} answered ${status}, which the description does not describe`;
    schema = { $ref: ERROR_POINTER };
    pointer = 'error';
  }
  if (schema === undefined) return body === null ? null : `${method} ${pathname} ${status}: a body the description does not describe`;
  const validate = validator(doc, pointer, schema);
  if (validate(body)) return null;
  return `${method} ${pathname} ${status} does not match the OpenAPI description: ${doc.ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 500)}`;
}

export async function checkResponse(origin: Origin, key: string | null, method: string, path: string, status: number, body: unknown): Promise<void> {
  // The description is of the REST API; operators' endpoints (health, metrics) are not part of it.
  if (!path.startsWith('/api/')) return;
  if (problemWith(await documentFor(origin, key, false), method, path, status, body) === null) return;
  const problem = problemWith(await documentFor(origin, key, true), method, path, status, body);
  if (problem !== null) throw new Error(problem);
}

/** The problem with a webhook request body against the description's `webhooks` entry, or null. */
export function webhookPayloadProblem(document: Json, body: Json): string | null {
  const entry = document['webhooks']?.[body['event']];
  if (!entry) return `the description has no webhook ${String(body['event'])}`;
  const ajv = newAjv(document);
  const schema = JSON.parse(JSON.stringify(entry.post.requestBody.content['application/json'].schema).replaceAll('"#/components', '"openapi#/components')) as Json;
  const validate = ajv.compile(schema);
  return validate(body) ? null : ajv.errorsText(validate.errors);
}
