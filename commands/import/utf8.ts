import { Transform, type TransformCallback } from 'node:stream';
import { ValidationFailed } from '../../src/core/errors.js';

/**
 * Bytes -> text, accepting UTF-8 only (with or without a byte order mark, which csv-parse drops).
 * UTF-16/32 byte order marks and byte sequences that are not UTF-8 (Latin-1, Windows-1252 exports)
 * fail with a message that says what to do, instead of importing mangled text.
 */

const NOT_UTF8 = 'the file is not UTF-8 text: save it as "CSV UTF-8" and import it again';

export function utf8Text(): Transform {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let first = true;
  const fail = (callback: TransformCallback, detail: string) => callback(new ValidationFailed(`${NOT_UTF8} (${detail})`));
  return new Transform({
    readableObjectMode: true,
    transform(chunk: Buffer, _encoding, callback) {
      if (first) {
        first = false;
        if ((chunk[0] === 0xff && chunk[1] === 0xfe) || (chunk[0] === 0xfe && chunk[1] === 0xff)) return fail(callback, 'it starts with a UTF-16 byte order mark');
        if (chunk.includes(0)) return fail(callback, 'it contains NUL bytes, as UTF-16 text does');
      }
      try {
        callback(null, decoder.decode(chunk, { stream: true }));
      } catch {
        fail(callback, 'it contains bytes that are not valid UTF-8');
      }
    },
    flush(callback) {
      try {
        const rest = decoder.decode();
        callback(null, rest === '' ? undefined : rest);
      } catch {
        fail(callback, 'it ends in the middle of a UTF-8 character');
      }
    },
  });
}
