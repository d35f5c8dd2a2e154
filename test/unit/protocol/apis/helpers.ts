/** Shared helpers for the API schema tests: encode/decode one body, and hex written with spacing. */
import { describe, expect, it } from 'vitest';
import { decodeRequestBody, decodeResponseBody, encodeRequestBody, encodeResponseBody, type ApiSchema } from '../../../../src/protocol/schema.js';
import { MalformedMessageError, WireReader, WireWriter } from '../../../../src/protocol/wire.js';

/** Hex with any spacing, `|` separators and `#…` comments to the end of a line. */
export function hex(text: string): Buffer {
  const digits = text.replace(/#[^\n]*/g, '').replace(/[\s|]/g, '');
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(digits)) throw new Error(`bad hex: ${digits}`);
  return Buffer.from(digits, 'hex');
}

/** A writer with the default small first chunk, so encoding exercises the writer's growth. */
export function newWriter(): WireWriter {
  return new WireWriter();
}

export function encodeRequest<Req, Res>(api: ApiSchema<Req, Res>, version: number, request: Req): Buffer {
  const writer = newWriter();
  encodeRequestBody(api, version, request, writer);
  return writer.toBuffer();
}

export function encodeResponse<Req, Res>(api: ApiSchema<Req, Res>, version: number, response: Res): Buffer {
  const writer = newWriter();
  encodeResponseBody(api, version, response, writer);
  return writer.toBuffer();
}

export function decodeRequest<Req, Res>(api: ApiSchema<Req, Res>, version: number, bytes: Buffer): Req {
  return decodeRequestBody(api, version, new WireReader(bytes));
}

/** Decodes a response body and checks that it used every byte. */
export function decodeResponse<Req, Res>(api: ApiSchema<Req, Res>, version: number, bytes: Buffer): Res {
  const reader = new WireReader(bytes);
  const value = decodeResponseBody(api, version, reader);
  expect(reader.remaining()).toBe(0);
  return value;
}

export function roundTripRequest<Req, Res>(api: ApiSchema<Req, Res>, version: number, request: Req): Req {
  return decodeRequest(api, version, encodeRequest(api, version, request));
}

export function roundTripResponse<Req, Res>(api: ApiSchema<Req, Res>, version: number, response: Res): Res {
  return decodeResponse(api, version, encodeResponse(api, version, response));
}

/** The versions an API serves, inclusive. */
export function versionsOf(api: { readonly minVersion: number; readonly maxVersion: number }): number[] {
  const list: number[] = [];
  for (let v = api.minVersion; v <= api.maxVersion; v += 1) list.push(v);
  return list;
}

/** Runs `action` and returns the class name of what it threw, or 'nothing'. */
export function thrownBy(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (error instanceof MalformedMessageError) return 'MalformedMessageError';
    return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  }
  return 'nothing';
}

/**
 * The batch kcat 1.7.1 sent for `-K : -H hk=hv` and message `key1:hello`, as stored by Apache
 * Kafka at offset 0 (kafka-protocol.md §4): a realistic Records payload (83 bytes).
 */
export const KCAT_BATCH = hex(`
  0000000000000000 00000047 00000000 02 9e1aa1d9 0000 00000000
  000001a227557d55 000001a227557d55 ffffffffffffffff ffff ffffffff 00000001
  2a 00 00 00 08 6b657931 0a 68656c6c6f 02 04 686b 04 6876
`);

/** What decoding each proper prefix of `bytes` threw, deduplicated (['MalformedMessageError'] when all is well). */
export function truncationOutcomes(bytes: Buffer, decode: (prefix: Buffer) => unknown): string[] {
  const outcomes = new Set<string>();
  for (let length = 0; length < bytes.length; length += 1) outcomes.add(thrownBy(() => decode(bytes.subarray(0, length))));
  return [...outcomes];
}

/** Decodes a response body without checking it was used up (for truncated bodies). */
export function decodeResponsePrefix<Req, Res>(api: ApiSchema<Req, Res>, version: number, bytes: Buffer): Res {
  return decodeResponseBody(api, version, new WireReader(bytes));
}

/** Tests that every proper prefix of each served version's request and response is a MalformedMessageError. */
export function truncationTests<Req, Res>(api: ApiSchema<Req, Res>, request: Req, response: Res): void {
  describe(`${api.name} truncated bodies`, () => {
    for (const v of versionsOf(api)) {
      it(`every prefix of a v${v} request and response is a MalformedMessageError`, () => {
        const requestBytes = encodeRequest(api, v, request);
        if (requestBytes.length > 0) expect(truncationOutcomes(requestBytes, (b) => decodeRequest(api, v, b))).toEqual(['MalformedMessageError']);
        expect(truncationOutcomes(encodeResponse(api, v, response), (b) => decodeResponsePrefix(api, v, b))).toEqual(['MalformedMessageError']);
      });
    }
  });
}
