import { Binary, MongoServerError, type Collection } from 'mongodb';
import { mongoDatabase, type MongoStoreOptions } from '../../readstore/mongodb/index.js';
import type { KeyStore } from '../port.js';

/**
 * Data keys on MongoDB: a `dataKeys` collection beside the read models, one document per record
 * (`_id` the key id). Creation is an insert the `_id` index lets only one caller win. Writes wait
 * for the majority, since a key cannot be rebuilt.
 */

export interface DataKeyDoc {
  _id: string;
  wrapped: Binary;
}

const COLLECTION = 'dataKeys';
const META_ID = '$master-check';
const MAJORITY = { writeConcern: { w: 'majority' as const, journal: true } };

/** Bytes out of what the driver gives back (a Binary, or a Buffer in some versions). */
export function bytesOf(value: Binary | Buffer | Uint8Array): Buffer {
  if (value instanceof Binary) return Buffer.from(value.buffer);
  return Buffer.from(value);
}

export async function openMongoKeyStore(options: MongoStoreOptions): Promise<KeyStore> {
  const { client, db, owned } = await mongoDatabase(options);
  const keys: Collection<DataKeyDoc> = db.collection<DataKeyDoc>(COLLECTION);
  const insertOnce = async (id: string, wrapped: Buffer): Promise<Buffer> => {
    try {
      await keys.insertOne({ _id: id, wrapped: new Binary(wrapped) }, MAJORITY);
      return wrapped;
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      const kept = await keys.findOne({ _id: id });
      return bytesOf(kept!.wrapped);
    }
  };
  return {
    create: insertOnce,
    async getMany(ids) {
      const found = new Map<string, Buffer>();
      if (ids.length === 0) return found;
      for (const doc of await keys.find({ _id: { $in: [...ids] } }).toArray()) found.set(doc._id, bytesOf(doc.wrapped));
      return found;
    },
    async delete(ids) {
      if (ids.length === 0) return 0;
      return (await keys.deleteMany({ _id: { $in: [...ids] } }, MAJORITY)).deletedCount;
    },
    async masterCheck() {
      const doc = await keys.findOne({ _id: META_ID });
      return doc ? bytesOf(doc.wrapped) : null;
    },
    setMasterCheck: (sealed) => insertOnce(META_ID, sealed),
    async close() {
      if (owned) await client.close();
    },
  };
}
