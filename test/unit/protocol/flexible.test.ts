/**
 * Flexible versions (KIP-482) in the schema engine and the wire reader/writer: compact strings,
 * bytes, records and arrays (unsigned varint length + 1, 0 = null), a TAG_BUFFER closing every
 * struct (skipped when decoding, written empty), with hand-laid bytes, and hostile input.
 */
import { describe, expect, it } from 'vitest';
import { array, decodeRequestBody, decodeResponseBody, encodeRequestBody, encodeResponseBody, field, isFlexibleVersion, versions, type ApiSchema } from '../../../src/protocol/schema.js';
import { WireReader, WireWriter, ZERO_COPY_BYTES, isExternalPart, type ExternalPart } from '../../../src/protocol/wire.js';
import { hex, thrownBy, truncationOutcomes } from './apis/helpers.js';

interface Item {
  readonly id: number;
  readonly label: string | null;
}

interface Message {
  readonly name: string;
  readonly note: string | null;
  readonly data: Buffer | null;
  readonly numbers: readonly number[];
  readonly items: readonly Item[] | null;
  readonly records: Buffer | null;
}

/** A made-up API: v0 non-flexible, v1+ flexible; the same fields in each. */
const TestApi: ApiSchema<Message, Message> = {
  apiKey: 9999,
  name: 'Test',
  minVersion: 0,
  maxVersion: 1,
  flexibleVersions: versions('1+'),
  request: [
    field('Name', 'string', '0+'),
    field('Note', 'string', '0+', { nullable: '0+' }),
    field('Data', 'bytes', '0+', { nullable: '0+' }),
    field('Numbers', array('int32'), '0+'),
    field('Items', array([field('Id', 'int16', '0+'), field('Label', 'string', '0+', { nullable: '0+' })]), '0+', { nullable: '0+' }),
    field('Records', 'records', '0+'),
  ],
  response: [],
};
const MESSAGE: Message = {
  name: 'ab',
  note: null,
  data: Buffer.from([0xca, 0xfe]),
  numbers: [1, 2],
  items: [
    { id: 7, label: 'x' },
    { id: 8, label: null },
  ],
  records: null,
};

const FLEXIBLE_BYTES = hex(`
  03 61 62            # Name "ab": length 2 + 1
  00                  # Note null
  03 ca fe            # Data 2 bytes
  03 00000001 00000002   # Numbers [1, 2]: count 2 + 1
  03                  # Items: 2 elements
  00 07 | 02 78 | 00  #   Id 7, Label "x", TAG_BUFFER (empty)
  00 08 | 00 | 00     #   Id 8, Label null, TAG_BUFFER
  00                  # Records null
  00                  # TAG_BUFFER of the message
`);

function encode(version: number, message: Message): Buffer {
  const writer = new WireWriter(8);
  encodeRequestBody(TestApi, version, message, writer);
  return writer.toBuffer();
}

function decode(version: number, bytes: Buffer): Message {
  return decodeRequestBody(TestApi, version, new WireReader(bytes));
}

describe('flexible versions: the schema engine', () => {
  it('knows which versions are flexible', () => {
    expect([isFlexibleVersion(TestApi, 0), isFlexibleVersion(TestApi, 1), isFlexibleVersion(TestApi, 7)]).toEqual([false, true, true]);
    expect(isFlexibleVersion({}, 0)).toBe(false);
  });

  it('encodes and decodes a flexible version compactly, with a TAG_BUFFER after each struct', () => {
    expect(encode(1, MESSAGE)).toStrictEqual(FLEXIBLE_BYTES);
    expect(decode(1, FLEXIBLE_BYTES)).toStrictEqual(MESSAGE);
  });

  it('keeps the non-flexible layout for the versions before', () => {
    const bytes = hex(`
      0002 6162 | ffff | 00000002 cafe | 00000002 00000001 00000002
      00000002 | 0007 0001 78 | 0008 ffff | ffffffff
    `);
    expect(encode(0, MESSAGE)).toStrictEqual(bytes);
    expect(decode(0, bytes)).toStrictEqual(MESSAGE);
  });

  it('writes null compact arrays, strings and bytes as 0 and empty ones as 1', () => {
    const message: Message = { name: '', note: '', data: Buffer.alloc(0), numbers: [], items: null, records: Buffer.alloc(0) };
    const bytes = hex('01 | 01 | 01 | 01 | 00 | 01 | 00');
    expect(encode(1, message)).toStrictEqual(bytes);
    expect(decode(1, bytes)).toStrictEqual(message);
  });

  it('writes lengths of 127 and more as multi-byte varints', () => {
    const name = 'n'.repeat(200); // 201 = 0xc9 0x01
    const bytes = encode(1, { ...MESSAGE, name });
    expect(bytes.subarray(0, 3)).toStrictEqual(hex('c9 01 6e'));
    expect(decode(1, bytes).name).toBe(name);
  });

  it('keeps long byte strings and external records out of the copy, behind a compact length', () => {
    const data = Buffer.alloc(ZERO_COPY_BYTES, 1);
    const writer = new WireWriter();
    writer.compactNullableBytes(data);
    const external: ExternalPart = { kind: 'external', length: 300, source: 'file range' };
    writer.compactExternal(external);
    writer.emptyTaggedFields();
    const parts = writer.finish();
    expect(parts[1]).toBe(data);
    expect(parts.filter(isExternalPart)).toEqual([external]);
    expect(parts[0]).toStrictEqual(hex('81 20')); // 4096 + 1
    expect(parts[2]).toStrictEqual(hex('ad 02')); // 300 + 1
    expect(parts[4]).toStrictEqual(hex('00'));
    expect(writer.length).toBe(2 + ZERO_COPY_BYTES + 2 + 300 + 1);
  });

  it('skips unknown tagged fields in every struct', () => {
    const bytes = hex(`
      03 61 62 | 00 | 03 ca fe | 03 00000001 00000002
      03
      00 07 | 02 78 | 02 | 00 01 aa | 05 03 01 02 03   # two tags: 0 (1 byte), 5 (3 bytes)
      00 08 | 00 | 00
      00
      01 | ff ff ff ff 0f 00                         # the message's: tag 2^32 − 1, 0 bytes
    `);
    expect(decode(1, bytes)).toStrictEqual(MESSAGE);
  });

  it('decodes a flexible response the same way', () => {
    const ResponseApi: ApiSchema<unknown, { readonly values: readonly string[] }> = {
      apiKey: 9998,
      name: 'TestResponse',
      minVersion: 0,
      maxVersion: 1,
      flexibleVersions: versions('1+'),
      request: [],
      response: [field('Values', array('string'), '0+')],
    };
    const writer = new WireWriter();
    encodeResponseBody(ResponseApi, 1, { values: ['a', ''] }, writer);
    const bytes = writer.toBuffer();
    expect(bytes).toStrictEqual(hex('03 02 61 01 00'));
    expect(decodeResponseBody(ResponseApi, 1, new WireReader(bytes))).toStrictEqual({ values: ['a', ''] });
  });
});

describe('flexible versions: hostile input', () => {
  it('makes every proper prefix a MalformedMessageError', () => {
    expect(truncationOutcomes(FLEXIBLE_BYTES, (b) => decode(1, b))).toEqual(['MalformedMessageError']);
  });

  const cases: readonly (readonly [string, string])[] = [
    ['a null where a string is required', '00'],
    ['a string length beyond the bytes', '05 61'],
    ['a string longer than 32767 bytes', '81 80 02'], // 32768 + 1
    ['a varint of more than 5 bytes', '80 80 80 80 80 01'],
    ['a varint beyond 32 bits', 'ff ff ff ff 1f'],
    ['an array count beyond the bytes', '01 00 00 ff ff ff ff 0f'],
    ['a null array where one is required', '01 00 00 00'],
    ['an element count the bytes cannot hold', '01 00 00 01 05 00 01 00 00'],
    ['a tag count beyond the bytes', '01 00 00 01 00 00 05 00 00'],
    ['a tagged field size beyond the bytes', '01 00 00 01 00 00 01 03 09 00'],
    ['a truncated tag buffer', '01 00 00 01 00 00'],
  ];
  for (const [what, bytes] of cases) {
    it(`refuses ${what}`, () => {
      expect(thrownBy(() => decode(1, hex(bytes)))).toBe('MalformedMessageError');
    });
  }

  it('refuses the bytes of a huge tag count without looping over it', () => {
    const started = performance.now();
    expect(thrownBy(() => decode(1, hex('01 00 00 01 00 00 | ff ff ff ff 0f')))).toBe('MalformedMessageError');
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('accepts the longest valid varints', () => {
    const reader = new WireReader(hex('ff ff ff ff 0f | 80 80 80 80 00 | 7f'));
    expect([reader.unsignedVarint(), reader.unsignedVarint(), reader.unsignedVarint(), reader.remaining()]).toEqual([0xffffffff, 0, 127, 0]);
  });

  it('writes unsigned varints as Kafka does, and only those', () => {
    const writer = new WireWriter(1);
    writer.unsignedVarint(0).unsignedVarint(127).unsignedVarint(128).unsignedVarint(300).unsignedVarint(0xffffffff);
    expect(writer.toBuffer()).toStrictEqual(hex('00 | 7f | 80 01 | ac 02 | ff ff ff ff 0f'));
    expect(thrownBy(() => new WireWriter().unsignedVarint(-1))).toMatch(/^RangeError/);
    expect(thrownBy(() => new WireWriter().unsignedVarint(2 ** 32))).toMatch(/^RangeError/);
    expect(thrownBy(() => new WireWriter().compactNullableString('x'.repeat(0x8000)))).toMatch(/^RangeError/);
  });
});
