import { stringOption, type CliResource } from './context.js';

export const workspaces: CliResource = {
  name: 'workspaces',
  description: 'a workspace holds one team’s records, API keys, users and webhooks',
  commands: {
    create: {
      usage: '<slug> [--name "Acme Inc"]',
      description: 'create a workspace (the name defaults to the slug)',
      positionals: ['slug'],
      options: { name: { type: 'string' } },
      async run({ positionals, values }, { setup }) {
        const workspace = await setup.createWorkspace(positionals[0]!, stringOption(values, 'name'));
        return { id: workspace.id, slug: workspace.slug, name: workspace.name };
      },
    },
    list: {
      usage: '',
      description: 'list every workspace of this store',
      async run(_, { setup }) {
        return (await setup.listWorkspaces()).map((workspace) => ({ id: workspace.id, slug: workspace.slug, name: workspace.name, createdAt: workspace.createdAt }));
      },
    },
  },
};
