import { FULL_ACCESS, openApiDocument } from '../http/openapi.js';
import { stringOption, type CliResource } from './context.js';
import { formatJson } from './output.js';

/** `csr openapi --workspace <slug>`: the OpenAPI 3.1 description of the whole workspace. */
export const openapi: CliResource = {
  name: 'openapi',
  description: "the OpenAPI 3.1 description of a workspace's API (all its objects and webhooks)",
  commands: {},
  direct: {
    usage: '--workspace <slug>',
    description: 'print the OpenAPI 3.1 document (JSON) of the workspace; the API serves each key its own at /api/v1/openapi.json',
    options: { workspace: { type: 'string' } },
    required: ['workspace'],
    async run({ values }, { objects }) {
      return openApiDocument(await objects.catalogue(stringOption(values, 'workspace')!), FULL_ACCESS);
    },
    text: (result: unknown) => formatJson(result),
  },
};
