import type { Catalogue } from '../schema/catalogue.js';
import { rowOf, type JsonSchema } from '../schema/formats.js';
import type { FieldDef, ObjectDef } from '../schema/types.js';
import { isFilterable } from '../schema/validate.js';

/**
 * The OpenAPI 3.1 description (spec 9: its own version 1.0.0), generated from a workspace's
 * catalogue and the format table, never written by hand: `GET /api/v1/openapi.json` describes
 * what the caller's key may reach, `csr openapi` the whole workspace. The tests validate it and
 * check every HTTP answer they receive against it.
 */

export const OPENAPI_VERSION = '1.0.0';

export interface Access {
  canAccess(object: string): boolean;
  /** A read-only key: no write operations are described. */
  readOnly: boolean;
}

export const FULL_ACCESS: Access = { canAccess: () => true, readOnly: false };

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonSchema) => ({ 'application/json': { schema } });
const UUID = { type: 'string', format: 'uuid' };
const DATE_TIME = { type: 'string', format: 'date-time' };

/** Errors each operation can answer (spec 7, PRODUCT.md section 3: conflicts, overload, full disk). */
const ERRORS = {
  list: ['401', '403', '404', '422', '429', '503'],
  upsert: ['401', '403', '404', '409', '413', '429', '503', '507'],
  get: ['401', '403', '404', '422', '429', '503'],
  patch: ['401', '403', '404', '409', '412', '413', '422', '429', '503', '507'],
  delete: ['401', '403', '404', '409', '412', '422', '429', '503', '507'],
  events: ['401', '403', '410', '422', '429', '503'],
} as const;

const ERROR_MEANINGS: Record<string, string> = {
  '401': 'missing, wrong or revoked API key',
  '403': 'the key has no access to this object, or it is read only and the request writes',
  '404': 'unknown object or record',
  '409': 'the record changed while saving; retry',
  '410': 'the cursor cannot be served (ahead of the log): start again without it',
  '412': 'If-Match names a version the record has moved on from; the ETag header (and the message) give its current ETag',
  '413': 'the request body is too large',
  '422': 'validation failed',
  '429': "the API key's rate limit is used up; retry after the Retry-After seconds (RateLimit-Policy and RateLimit describe the limit)",
  '503': 'busy or not caught up yet; retry after the Retry-After seconds when given',
  '507': 'the server has no room left to record the change; reads go on',
};

export function openApiDocument(catalogue: Catalogue, access: Access = FULL_ACCESS): Record<string, unknown> {
  const visible = catalogue.objects.filter((object) => access.canAccess(object.key));
  // Webhook payloads show every link in full (spec 6.3); a key limited to some objects has its
  // records' links masked, so those payloads get a schema of their own.
  const masked = visible.length < catalogue.objects.length;
  const schemas: Record<string, JsonSchema> = { ...COMMON_SCHEMAS };
  const paths: Record<string, unknown> = {
    '/api/v1/openapi.json': {
      get: {
        operationId: 'openapi',
        summary: 'this description, for the calling key',
        responses: { '200': { description: 'the OpenAPI 3.1 document', content: json({ type: 'object' }) }, '401': errorRef('401') },
      },
    },
  };
  const feedItems: JsonSchema[] = [];
  const webhooks: Record<string, unknown> = { 'webhook.test': webhook('webhook.test', ref('TestEventData'), null) };

  for (const object of visible) {
    const name = schemaName(object.key);
    schemas[name] = recordSchema(object, access);
    schemas[`${name}Input`] = inputSchema(object);
    schemas[`${name}List`] = envelope({ data: { type: 'array', items: ref(name) }, total: INT, limit: INT, offset: INT });
    schemas[`${name}One`] = envelope({ data: ref(name) });
    paths[`/api/v1/${object.key}`] = collectionPath(object, name, access);
    paths[`/api/v1/${object.key}/{id}`] = recordPath(object, name, access);
    paths[`/api/v1/${object.key}/{id}/history`] = historyPath(object);
    feedItems.push(feedItem(object.key, ref(name)));
    const payloadRecord = masked ? `${name}Event` : name;
    if (payloadRecord !== name) schemas[payloadRecord] = recordSchema(object, FULL_ACCESS);
    for (const kind of ['created', 'updated', 'deleted']) {
      webhooks[`${object.key}.${kind}`] = webhook(`${object.key}.${kind}`, ref(payloadRecord), object.key);
      webhooks[`${object.key}.${kind}.bulk`] = webhook(`${object.key}.${kind}.bulk`, ref('BulkData'), object.key);
    }
  }

  schemas['ChangeEvent'] = feedItems.length > 0 ? { anyOf: feedItems } : { not: {} };
  schemas['ChangeFeed'] = envelope({
    data: { type: 'array', items: ref('ChangeEvent') },
    next: { type: 'string', description: 'the cursor to pass as "after" next time (store it once the page is applied)' },
    hasMore: { type: 'boolean', description: 'more events may be there already: fetch again at once' },
  });
  paths['/api/v1/events'] = feedPath();

  return {
    openapi: '3.1.0',
    info: {
      title: 'Customer Success Records API',
      version: OPENAPI_VERSION,
      description: `REST API version 1 and webhooks version 1 of workspace ${catalogue.workspaceId}: its default and own objects.`,
    },
    servers: [{ url: '{base_url}', variables: { base_url: { default: 'http://localhost:8080' } } }],
    security: [{ bearer: [] }],
    tags: visible.map((object) => ({ name: object.key, description: object.label })),
    paths,
    webhooks,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>' } },
      schemas,
      parameters: PARAMETERS,
      responses: Object.fromEntries(Object.entries(ERROR_MEANINGS).map(([status, description]) => [status, errorResponse(status, description)])),
      headers: {
        'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
        'RateLimit-Policy': { description: 'under a rate limit (IETF httpapi draft): the key\'s bucket, "key";q=<burst>;w=<seconds to refill it>', schema: { type: 'string' } },
        RateLimit: { description: 'under a rate limit: "key";r=<requests left>;t=<seconds until the bucket is full again>', schema: { type: 'string' } },
        ETag: { description: 'the record\'s revision, a strong validator: send it back in If-Match (writes) or If-None-Match (GET)', schema: { type: 'string', pattern: '^"[0-9]+"$' } },
      },
    },
  };
}

const INT = { type: 'integer', minimum: 0 };

function schemaName(objectKey: string): string {
  return objectKey.charAt(0).toUpperCase() + objectKey.slice(1);
}

function envelope(properties: Record<string, unknown>): JsonSchema {
  return { type: 'object', required: Object.keys(properties), properties, additionalProperties: false };
}

function errorRef(status: string) {
  return { $ref: `#/components/responses/${status}` };
}

function errorResponse(status: string, description: string) {
  const limits = status === '429' ? { 'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' }, RateLimit: { $ref: '#/components/headers/RateLimit' } } : {};
  const retry = status === '503' || status === '429' ? { headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' }, ...limits } } : {};
  const etag = status === '412' ? { headers: { ETag: { $ref: '#/components/headers/ETag' } } } : {};
  return { description, ...retry, ...etag, content: json(ref('Error')) };
}

function describeField(field: FieldDef, object: ObjectDef): Record<string, unknown> {
  const notes = [field.label, field.required ? `required when creating a ${object.key} record` : null].filter(Boolean).join('; ');
  return { title: field.label, description: notes, ...(field.personal ? { 'x-personal-data': true } : {}) };
}

function recordSchema(object: ObjectDef, access: Access): JsonSchema {
  const properties: Record<string, unknown> = { id: { ...UUID, readOnly: true } };
  for (const field of object.fields) properties[field.key] = { ...rowOf(field.format).returned(field.format as never, access), ...describeField(field, object) };
  properties['createdAt'] = { ...DATE_TIME, readOnly: true };
  properties['updatedAt'] = { ...DATE_TIME, readOnly: true };
  return { type: 'object', title: object.label, required: Object.keys(properties), properties, additionalProperties: false };
}

function inputSchema(object: ObjectDef): JsonSchema {
  const properties: Record<string, unknown> = { id: { ...UUID, description: 'updates the record with this id' } };
  for (const field of object.fields) {
    const sent = rowOf(field.format).sent(field.format as never);
    if (sent) properties[field.key] = { ...sent, ...describeField(field, object) };
  }
  return { type: 'object', title: `${object.label} (as sent)`, properties, additionalProperties: false };
}

function collectionPath(object: ObjectDef, name: string, access: Access) {
  const filters = object.fields.filter(isFilterable).map((field) => ({
    name: field.key,
    in: 'query',
    required: false,
    description: `exact, case-insensitive filter on ${field.label}${field.format.type === 'link' || field.format.type === 'linkList' ? " (the linked record's id)" : ''}`,
    schema: { type: 'string' },
  }));
  const path: Record<string, unknown> = {
    get: {
      operationId: `list_${object.key}`,
      tags: [object.key],
      summary: `list ${object.label} records, in creation order`,
      parameters: [{ $ref: '#/components/parameters/limit' }, { $ref: '#/components/parameters/offset' }, { $ref: '#/components/parameters/updated_since' }, { $ref: '#/components/parameters/as_of' }, ...filters],
      responses: { '200': { description: 'a page of records', content: json(ref(`${name}List`)) }, ...errors(ERRORS.list) },
    },
  };
  if (access.readOnly) return path;
  const input = ref(`${name}Input`);
  const saved = { content: json(ref('SaveResult')) };
  path['post'] = {
    operationId: `upsert_${object.key}`,
    tags: [object.key],
    summary: `create or update ${object.label} records (upsert)`,
    parameters: [{ $ref: '#/components/parameters/match' }, { $ref: '#/components/parameters/Idempotency-Key' }, { $ref: '#/components/parameters/If-Match' }],
    requestBody: {
      required: true,
      content: json({
        anyOf: [input, { type: 'array', items: input, minItems: 1, maxItems: 1000 }, envelope({ records: { type: 'array', items: input, minItems: 1, maxItems: 1000 } })],
      }),
    },
    responses: {
      '200': { description: 'all records saved, some or all of them updated', ...saved },
      '201': { description: 'all records created', ...saved },
      '207': { description: 'some records failed; the others were saved', ...saved },
      '422': { description: 'validation failed: the request, or every record of it', content: json({ anyOf: [ref('Error'), ref('SaveFailed')] }) },
      ...errors(ERRORS.upsert),
    },
  };
  return path;
}

function recordPath(object: ObjectDef, name: string, access: Access) {
  const withEtag = { headers: { ETag: { $ref: '#/components/headers/ETag' } } };
  const one = { description: 'the record', ...withEtag, content: json(ref(`${name}One`)) };
  const path: Record<string, unknown> = {
    parameters: [{ $ref: '#/components/parameters/id' }],
    get: {
      operationId: `get_${object.key}`,
      tags: [object.key],
      parameters: [{ $ref: '#/components/parameters/as_of' }, { $ref: '#/components/parameters/If-None-Match' }],
      responses: { '200': one, '304': { description: 'not modified: If-None-Match names the current ETag', ...withEtag }, ...errors(ERRORS.get) },
    },
  };
  if (access.readOnly) return path;
  const idempotency = [{ $ref: '#/components/parameters/Idempotency-Key' }, { $ref: '#/components/parameters/If-Match' }];
  path['patch'] = {
    operationId: `patch_${object.key}`,
    tags: [object.key],
    parameters: idempotency,
    requestBody: { required: true, content: json(ref(`${name}Input`)) },
    responses: { '200': one, ...errors(ERRORS.patch) },
  };
  path['delete'] = {
    operationId: `delete_${object.key}`,
    tags: [object.key],
    parameters: idempotency,
    responses: { '200': { description: 'the record was deleted', content: json(ref('Deleted')) }, ...errors(ERRORS.delete) },
  };
  return path;
}

function historyPath(object: ObjectDef) {
  return {
    parameters: [{ $ref: '#/components/parameters/id' }],
    get: {
      operationId: `history_${object.key}`,
      tags: [object.key],
      summary: "the record's changes, oldest first",
      parameters: [{ $ref: '#/components/parameters/limit' }, { $ref: '#/components/parameters/offset' }],
      responses: { '200': { description: 'history entries', content: json(ref('HistoryList')) }, ...errors(ERRORS.get) },
    },
  };
}

/** One change of the feed: the body its webhook receives (spec 6.3) without sentAt; links masked as GET masks them. */
function feedItem(objectKey: string, data: JsonSchema): JsonSchema {
  return envelope({
    id: UUID,
    event: { enum: ['created', 'updated', 'deleted'].map((kind) => `${objectKey}.${kind}`) },
    object: { const: objectKey },
    source: { enum: ['app', 'import', 'api', 'automation', 'health score'] },
    occurredAt: DATE_TIME,
    data,
  });
}

function feedPath() {
  const parameter = (name: string, description: string, schema: JsonSchema) => queryParameter(name, description, schema);
  return {
    get: {
      operationId: 'events',
      summary: 'the change feed: record events of the objects this key may read, in log order (docs/sync-clients.md)',
      description:
        'Each item is the body a webhook receives for that change (without sentAt): created, updated (erasures too, the erased fields null) and deleted (the record as last saved); an action on many records is listed record by record. ' +
        'Pages never skip or repeat an event, also while writes land. The cursor is a log position: it stays valid across read-model rebuilds. A cursor ahead of the log is 410: start again without "after".\n\n' +
        'A sync loop: (1) GET /api/v1/events?limit=1000&after=<stored cursor> (no cursor yet: leave "after" out); ' +
        '(2) apply the items in order: upsert created and updated by data.id, remove deleted; ' +
        '(3) only then store "next" as the cursor; (4) while hasMore is true, go to 1 at once; else long-poll with wait=30 and go to 1. ' +
        'A 410 means: drop the copy and start again without "after". Webhook deliveries share the event ids: skip an id already applied.',
      parameters: [
        parameter('after', 'the "next" of the previous page; absent: from the first event', { type: 'string' }),
        parameter('limit', 'events per page, 1 to 1000', { type: 'integer', minimum: 1, maximum: 1000, default: 100 }),
        parameter('objects', 'comma-separated object keys (default: every object the key may read)', { type: 'string' }),
        parameter('types', 'comma-separated kinds: created, updated, deleted (default: all)', { type: 'string' }),
        parameter('wait', 'long poll: when no event is there yet, wait up to this many seconds for one', { type: 'integer', minimum: 0, maximum: 30, default: 0 }),
      ],
      responses: { '200': { description: 'a page of events', content: json(ref('ChangeFeed')) }, ...errors(ERRORS.events) },
    },
  };
}

function errors(statuses: readonly string[]) {
  return Object.fromEntries(statuses.map((status) => [status, errorRef(status)]));
}

function webhook(event: string, data: JsonSchema, object: string | null) {
  const header = (name: string, description: string, schema: JsonSchema = { type: 'string' }) => ({ name, in: 'header', required: true, description, schema });
  return {
    post: {
      summary: `${event} (signed with the webhook's secret)`,
      parameters: [
        header('X-SVC-Event', 'the event kind', { const: event }),
        header('X-SVC-Delivery', 'number identifying one delivery to one webhook'),
        header('X-SVC-Timestamp', 'equals sentAt in the body', DATE_TIME),
        header('X-SVC-Signature', 'sha256= followed by the lowercase hex HMAC-SHA256 of the raw body', { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' }),
      ],
      requestBody: {
        required: true,
        content: json(
          envelope({
            id: UUID,
            event: { const: event },
            object: object === null ? { type: 'null' } : { const: object },
            source: { enum: ['app', 'import', 'api', 'automation', 'health score'] },
            occurredAt: DATE_TIME,
            sentAt: DATE_TIME,
            data,
          }),
        ),
      },
      responses: { '2XX': { description: 'received; any other answer, a redirect or none within 10 s is retried' } },
    },
  };
}

const nullableString = { type: ['string', 'null'] };

const COMMON_SCHEMAS: Record<string, JsonSchema> = {
  Error: envelope({ error: envelope({ status: { type: 'integer' }, message: { type: 'string' } }) }),
  SaveResult: envelope({
    created: INT,
    updated: INT,
    errors: { type: 'array', items: envelope({ index: INT, message: { type: 'string' } }) },
    ids: { type: 'array', items: UUID },
  }),
  SaveFailed: {
    type: 'object',
    required: ['error', 'created', 'updated', 'errors', 'ids'],
    properties: {
      error: { $ref: '#/components/schemas/Error/properties/error' },
      created: { const: 0 },
      updated: { const: 0 },
      errors: { type: 'array', items: envelope({ index: INT, message: { type: 'string' } }) },
      ids: { type: 'array', maxItems: 0 },
    },
    additionalProperties: false,
  },
  Deleted: envelope({ deleted: UUID }),
  LinkRef: envelope({ id: UUID, name: nullableString }),
  LinkId: envelope({ id: UUID }),
  PersonRef: envelope({ id: { type: 'string' }, name: nullableString }),
  FileRef: envelope({ id: { type: 'string' }, name: { type: 'string' }, size: INT }),
  BulkData: envelope({ count: { type: 'integer', minimum: 1 }, ids: { type: 'array', items: UUID, maxItems: 500 } }),
  TestEventData: envelope({ webhook: envelope({ id: UUID, name: { type: 'string' } }) }),
  HistoryEntry: {
    type: 'object',
    required: ['revision', 'event', 'occurredAt', 'source', 'actor', 'changes'],
    properties: {
      revision: INT,
      event: { type: 'string', enum: ['created', 'updated', 'deleted', 'erased'], description: '`erased`: the erasure of the record\'s personal data (field keys and reason, never values)' },
      occurredAt: DATE_TIME,
      source: { type: 'string' },
      actor: { type: 'object', required: ['type', 'id', 'name'], properties: { type: { type: 'string' }, id: { type: 'string' }, name: { type: 'string' } } },
      via: nullableString,
      changes: {
        type: 'object',
        description: 'each field with its values, or `{ "erased": true }` once they were erased',
        additionalProperties: {
          oneOf: [
            { type: 'object', required: ['from', 'to'], properties: { from: {}, to: {} } },
            { type: 'object', required: ['erased'], properties: { erased: { const: true } }, additionalProperties: false },
          ],
        },
      },
      erased: { type: 'array', items: { type: 'string' }, description: 'personal fields of this change erased since (`{ "erased": true }` in changes)' },
      erasedAt: { ...DATE_TIME, description: 'when the fields in `erased` were erased' },
      reason: { ...nullableString, description: 'on an `erased` entry: the reason given for the erasure' },
      rollups: {
        type: 'object',
        description: 'on a roll-up change: the roll-ups that moved',
        additionalProperties: { type: 'object', required: ['from', 'to'], properties: { from: {}, to: {} } },
      },
    },
  },
  HistoryList: envelope({ data: { type: 'array', items: ref('HistoryEntry') }, total: INT, limit: INT, offset: INT }),
};

const queryParameter = (name: string, description: string, schema: JsonSchema) => ({ name, in: 'query', required: false, description, schema });

const PARAMETERS = {
  id: { name: 'id', in: 'path', required: true, description: 'the record uuid', schema: UUID },
  limit: queryParameter('limit', 'records per page, 1 to 1000', { type: 'integer', minimum: 1, maximum: 1000, default: 100 }),
  offset: queryParameter('offset', 'records to skip', { type: 'integer', minimum: 0, default: 0 }),
  updated_since: queryParameter('updated_since', 'only records changed strictly after this moment', DATE_TIME),
  as_of: queryParameter('as_of', 'the records as they were at this moment', DATE_TIME),
  match: queryParameter('match', 'comma-separated field keys that find the record to update (default: the unique fields sent, else the record name)', { type: 'string' }),
  'If-Match': {
    name: 'If-Match',
    in: 'header',
    required: false,
    description:
      'write only if the record is still at this ETag (as GET answered it; * for any existing record); otherwise 412 naming the current one. On an upsert it applies to each record sent with an id: one that moved on fails alone (in errors)',
    schema: { type: 'string' },
  },
  'If-None-Match': {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: '304 without a body when the record is still at this ETag',
    schema: { type: 'string' },
  },
  'Idempotency-Key': {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description: 'a repeat with the same key, method, path and body within 24 hours returns the first answer without a second change',
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  },
};
