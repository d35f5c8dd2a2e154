/**
 * Numbers JSON.parse turns into Infinity (1e400) are refused with their location: the registry
 * stores the re-serialized text, where Infinity becomes null, so it would serve a schema other
 * than the one it checked (`"default": 1e400` on a double came back as `"default": null`, which
 * no Avro parser accepts). Found by the registry fuzz run (test/chaos/registry-fuzz.ts).
 */
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { isTributaryError, type TributaryError } from '../../../src/common/errors.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';

function parseError(text: string): TributaryError {
  try {
    parseAvroSchema(text);
  } catch (error) {
    if (isTributaryError(error)) return error;
    throw new Error(`expected a TributaryError, got ${String(error)}`);
  }
  throw new Error(`expected ${text} to be refused`);
}

describe('numbers beyond a double', () => {
  it.each([
    ['a double default', '{"type":"record","name":"D","fields":[{"name":"a","type":"double","default":1e400}]}', '/fields/0/default'],
    ['a float default, negative', '{"type":"record","name":"D","fields":[{"name":"a","type":"float","default":-1e999}]}', '/fields/0/default'],
    ['a custom attribute', '{"type":"record","name":"D","x-weight":{"max":1e400},"fields":[]}', '/x-weight/max'],
    ['an array default element', '{"type":"record","name":"D","fields":[{"name":"a","type":{"type":"array","items":"double"},"default":[1,1e400]}]}', '/fields/0/default/1'],
  ])('refuses %s, naming where', (_what, text, location) => {
    const error = parseError(text);
    expect(error.code).toBe('SCHEMA_INVALID');
    expect(error.message).toContain(`at ${location}: the number is too large for a double`);
  });

  it('keeps the largest finite double, whose stored text parses back to the same schema', () => {
    const parsed = parseAvroSchema('{"type":"record","name":"D","fields":[{"name":"a","type":"double","default":1.7976931348623157e308}]}');
    expect(() => avro.Type.forSchema(JSON.parse(parsed.text) as avro.Schema)).not.toThrow();
    expect(parseAvroSchema(parsed.text).fingerprint).toBe(parsed.fingerprint);
  });
});
