import type { EventStore } from '../eventstore/port.js';
import { Catalogues } from '../setup/catalogues.js';
import { loadMasterKey, masterKeyPath } from './masterKey.js';
import type { KeyStore } from './port.js';
import { privateEvents, type PersonalFields, type PrivateEventStore } from './privateEvents.js';
import { Vault } from './vault.js';
import { personalOf } from './personal.js';

export { personalOf };

/**
 * Personal data in the log (docs/privacy.md): the event store wrapped so that personal fields are
 * sealed under their record's data key, with the keys in `keys` wrapped by the master key.
 */

export interface PrivacyOptions {
  dataDir: string;
  masterKeyFile: string | null;
}

export async function withPrivacy(stored: EventStore, keys: KeyStore, options: PrivacyOptions): Promise<PrivateEventStore> {
  const master = loadMasterKey(options.dataDir, options.masterKeyFile);
  const vault = await Vault.open(master, keys, `MASTER_KEY_FILE=${masterKeyPath(options.dataDir, options.masterKeyFile)}`);
  // Workspace streams hold no personal values: the catalogues read the store underneath.
  const catalogues = new Catalogues(stored);
  let watching: Promise<void> | null = null;
  const personalFields: PersonalFields = async (workspaceId, object) => {
    watching ??= catalogues.watch();
    await watching;
    const def = (await catalogues.get(workspaceId)).object(object);
    return personalOf(def);
  };
  return privateEvents(stored, vault, personalFields, async () => {
    if (watching) await catalogues.close();
    await keys.close();
  });
}
