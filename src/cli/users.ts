import { stringOption, type CliResource } from './context.js';

export const users: CliResource = {
  name: 'users',
  description: 'the people of a workspace (record owners, assignees)',
  commands: {
    add: {
      usage: '--workspace <slug> --name "Ana Lima" --email ana@x.test',
      description: 'add a user; the email is unique in the workspace',
      options: { workspace: { type: 'string' }, name: { type: 'string' }, email: { type: 'string' } },
      required: ['workspace', 'name', 'email'],
      async run({ values }, { setup }) {
        const user = await setup.addUser(stringOption(values, 'workspace')!, {
          name: stringOption(values, 'name')!,
          email: stringOption(values, 'email')!,
        });
        return { id: user.id, name: user.name, email: user.email };
      },
    },
    list: {
      usage: '--workspace <slug>',
      description: "list a workspace's users",
      options: { workspace: { type: 'string' } },
      required: ['workspace'],
      async run({ values }, { setup }) {
        return (await setup.listUsers(stringOption(values, 'workspace')!)).map((user) => ({ id: user.id, name: user.name, email: user.email, createdAt: user.createdAt }));
      },
    },
  },
};
