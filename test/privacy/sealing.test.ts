import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hasSealed, holdsPersonal, openData, sealData } from '../../src/privacy/sealing.js';
import { isSealed } from '../../src/privacy/vault.js';

/** Where personal values sit in events, sealed and opened (src/privacy/sealing.ts), as given/when/then tables. */

const id = randomUUID();
const key = randomBytes(32);
const personal = new Set(['email', 'phone', 'vipEmail']);
const base = { schemaVersion: 1, workspaceId: 'w', object: 'contacts', recordId: id };

describe('sealing', () => {
  it.each([
    ['RecordCreated', { ...base, fields: { email: 'a@b.co', role: 'CEO', vipEmail: 'v@b.co', phone: null } }, ['fields.email', 'fields.vipEmail'], ['fields.role', 'fields.phone']],
    ['RecordDeleted', { ...base, fields: { email: 'a@b.co', role: 'CEO' }, calculated: {} }, ['fields.email'], ['fields.role']],
    ['RecordUpdated', { ...base, changes: { email: { from: 'a@b.co', to: 'c@d.co' }, role: { from: 'x', to: 'y' } } }, ['changes.email.from', 'changes.email.to'], ['changes.role.from']],
    ['ValueReserved', { ...base, key: { kind: 'fields', fields: ['email'], values: ['a@b.co'] } }, ['key.values'], ['key.kind']],
  ])('given %s with personal values, sealing hides exactly them and opening gives them back', (type, data, sealedPaths, plainPaths) => {
    const at = (value: unknown, path: string) => path.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], value);
    expect(holdsPersonal(type, data, personal)).toBe(true);
    const sealed = sealData(type, data, personal, key);
    for (const path of sealedPaths) expect(isSealed(at(sealed, path)), path).toBe(true);
    for (const path of plainPaths) expect(at(sealed, path)).toEqual(at(data, path));
    expect(JSON.stringify(sealed)).not.toContain('a@b.co');
    expect(hasSealed(type, sealed)).toBe(true);
    expect(openData(type, sealed, key)).toEqual(data);
  });

  it('given a deleted key, personal values read null and are listed as erased; the rest reads as written', () => {
    const data = { ...base, changes: { email: { from: null, to: 'a@b.co' }, role: { from: null, to: 'CEO' } } };
    const opened = openData('RecordUpdated', sealData('RecordUpdated', data, personal, key), undefined);
    expect(opened).toEqual({ ...base, changes: { email: { from: null, to: null }, role: { from: null, to: 'CEO' } }, erased: ['email'] });
  });

  it('given another key (a key made after an erasure), old values stay closed', () => {
    const data = { ...base, fields: { email: 'a@b.co' } };
    expect(openData('RecordCreated', sealData('RecordCreated', data, personal, key), randomBytes(32))).toEqual({ ...base, fields: { email: null }, erased: ['email'] });
  });

  it('given a sealed box moved to another record, or altered, it does not open', () => {
    const sealed = sealData('RecordCreated', { ...base, fields: { email: 'a@b.co' } }, personal, key) as { fields: { email: unknown }; $sealed: string };
    expect(openData('RecordCreated', { ...sealed, recordId: randomUUID() }, key)).toMatchObject({ fields: { email: null }, erased: ['email'] });
    const altered = Buffer.from(sealed.$sealed, 'base64');
    altered[altered.length - 1]! ^= 1;
    expect(openData('RecordCreated', { ...sealed, $sealed: altered.toString('base64') }, key)).toMatchObject({ fields: { email: null } });
  });

  it('given a legacy event re-encrypted over an already sealed one, both values open', () => {
    const first = sealData('RecordUpdated', { ...base, changes: { email: { from: null, to: 'a@b.co' } } }, personal, key);
    const both = sealData('RecordUpdated', { ...first, changes: { ...(first['changes'] as object), phone: { from: null, to: '+1 555' } } }, personal, key);
    expect(openData('RecordUpdated', both, key)).toMatchObject({ changes: { email: { to: 'a@b.co' }, phone: { to: '+1 555' } } });
  });

  it('given no personal value (or an object without personal fields), nothing is sealed', () => {
    expect(holdsPersonal('RecordCreated', { ...base, fields: { role: 'CEO', email: null } }, personal)).toBe(false);
    expect(holdsPersonal('RecordRollupsChanged', { ...base, rollups: {} }, personal)).toBe(false);
    expect(holdsPersonal('RecordCreated', { ...base, fields: { email: 'a@b.co' } }, new Set())).toBe(false);
  });
});
