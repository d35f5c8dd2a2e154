/** The schema-registry framing: golden bytes, ids big enough to catch endianness, and every refusal. */
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { FRAME_HEADER_BYTES, frame, schemaIdOf, writeFrameHeader } from '../../../src/registry/serde/framing.js';

function thrown(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('expected a throw');
}

describe('schema-registry framing', () => {
  it('writes magic 0, the id big-endian and the Avro bytes (the bytes kafkajs writes for {name:"ann"} as id 1)', () => {
    const type = avro.Type.forSchema({ type: 'record', name: 'User', fields: [{ name: 'name', type: 'string' }] });
    const message = frame(1, type.toBuffer({ name: 'ann' }));
    expect(message.toString('hex')).toBe('00' + '00000001' + '06' + '616e6e');
    expect(schemaIdOf(message)).toBe(1);
  });

  it('reads ids above 2^24 and up to 2^31-1 in big-endian order', () => {
    for (const id of [0x01020304, 2 ** 24 + 1, 2 ** 31 - 1]) {
      const header = Buffer.alloc(FRAME_HEADER_BYTES);
      writeFrameHeader(header, id);
      expect(header.readInt32BE(1)).toBe(id);
      expect(schemaIdOf(header)).toBe(id);
    }
    expect(frame(0x01020304, new Uint8Array()).toString('hex')).toBe('0001020304');
  });

  it('reads a plain Uint8Array as well as a Buffer', () => {
    expect(schemaIdOf(new Uint8Array([0, 0, 0, 1, 0, 42]))).toBe(256);
  });

  it('refuses a wrong magic byte, naming the byte and saying the payload is not framed', () => {
    const error = thrown(() => schemaIdOf(Buffer.from('{"name":"ann"}')));
    expect(error.code).toBe('SERDE_NOT_FRAMED');
    expect(error.message).toContain('starts with byte 0x7b, not the magic byte 0x00');
    expect(error.message).toContain('not schema-registry framed');
    expect(error.message).toContain('looks like JSON');
    const guid = thrown(() => schemaIdOf(Buffer.from([1, ...new Array<number>(16).fill(7), 2])));
    expect(guid.code).toBe('SERDE_NOT_FRAMED');
    expect(guid.message).toContain('magic byte 1 is Confluent 8.x GUID framing');
  });

  it('refuses a message shorter than the header, with its length and bytes', () => {
    for (const bytes of [[], [0], [0, 0, 0, 1]]) {
      const error = thrown(() => schemaIdOf(Buffer.from(bytes)));
      expect(error.code).toBe('SERDE_FRAME_TOO_SHORT');
      expect(error.message).toContain(`is ${bytes.length} byte`);
      expect(error.message).toContain('shorter than the 5-byte schema-registry header');
    }
  });

  it('refuses id 0 and negative ids, which no registry gives out', () => {
    expect(thrown(() => schemaIdOf(Buffer.from([0, 0, 0, 0, 0, 1]))).code).toBe('SERDE_BAD_SCHEMA_ID');
    const negative = thrown(() => schemaIdOf(Buffer.from([0, 0xff, 0xff, 0xff, 0xfe])));
    expect(negative.code).toBe('SERDE_BAD_SCHEMA_ID');
    expect(negative.message).toContain('schema id -2');
    expect(thrown(() => frame(0, new Uint8Array())).code).toBe('SERDE_BAD_SCHEMA_ID');
    expect(thrown(() => frame(2 ** 31, new Uint8Array())).code).toBe('SERDE_BAD_SCHEMA_ID');
  });
});
