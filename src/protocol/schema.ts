/**
 * Message schemas in the style of Kafka's own message definitions: each field has a type and the
 * range of versions it exists in (and may be null in). One schema describes every version of a
 * message, so each API is one file of data, decoded and encoded by this engine.
 *
 *   field('Topics', array([field('Name', 'string', '0+')]), '0+', { nullable: '1+' })
 *
 * Decoding a version fills absent fields with their default; encoding writes only the fields the
 * version has. Field names become camelCase keys: `PartitionIndex` → `partitionIndex`.
 *
 * An API's `flexibleVersions` (KIP-482, Kafka's "flexibleVersions") are encoded compactly:
 * strings, bytes, records and arrays carry an unsigned varint length + 1 (0 = null), and every
 * struct, the message itself included, ends with a TAG_BUFFER. No schema here declares a tagged
 * field: decoding skips every tag it finds (bounded by the bytes left), encoding writes none.
 */
import type { WireReader, WireWriter} from './wire.js';
import { MalformedMessageError, isExternalPart } from './wire.js';

export type PrimitiveType = 'int8' | 'int16' | 'int32' | 'int64' | 'uint32' | 'float64' | 'bool' | 'string' | 'bytes' | 'records';

export interface ArrayType {
  readonly array: PrimitiveType | readonly Field[];
}

export type FieldType = PrimitiveType | ArrayType | readonly Field[];

export interface VersionRange {
  readonly min: number;
  readonly max: number;
}

export interface Field {
  readonly name: string;
  readonly key: string;
  readonly type: FieldType;
  readonly versions: VersionRange;
  readonly nullable: VersionRange | undefined;
  readonly defaultValue: unknown;
}

/** `'3+'`, `'0-4'`, `'5'` → a range; `'none'` → empty. */
export function versions(spec: string): VersionRange {
  if (spec === 'none') return { min: 1, max: 0 };
  const plus = /^(\d+)\+$/.exec(spec);
  if (plus) return { min: Number(plus[1]), max: Number.MAX_SAFE_INTEGER };
  const range = /^(\d+)-(\d+)$/.exec(spec);
  if (range) return { min: Number(range[1]), max: Number(range[2]) };
  if (/^\d+$/.test(spec)) return { min: Number(spec), max: Number(spec) };
  throw new Error(`bad version range "${spec}"`);
}

function inRange(range: VersionRange | undefined, version: number): boolean {
  return range !== undefined && version >= range.min && version <= range.max;
}

export function field(
  name: string,
  type: FieldType,
  versionSpec: string,
  options: { nullable?: string; default?: unknown } = {},
): Field {
  return {
    name,
    key: name.charAt(0).toLowerCase() + name.slice(1),
    type,
    versions: versions(versionSpec),
    nullable: options.nullable === undefined ? undefined : versions(options.nullable),
    defaultValue: options.default,
  };
}

export function array(element: PrimitiveType | readonly Field[]): ArrayType {
  return { array: element };
}

function isArrayType(type: FieldType): type is ArrayType {
  return typeof type === 'object' && 'array' in type;
}

function isStruct(type: FieldType | PrimitiveType | readonly Field[]): type is readonly Field[] {
  return Array.isArray(type);
}

/** Smallest encoded size of one value, used to bound array counts before decoding them. */
function minimumSize(type: FieldType, version: number, flexible: boolean): number {
  if (isArrayType(type)) return flexible ? 1 : 4;
  if (isStruct(type)) return type.reduce((sum, f) => sum + (inRange(f.versions, version) ? minimumSize(f.type, version, flexible) : 0), flexible ? 1 : 0);
  switch (type) {
    case 'int8':
    case 'bool':
      return 1;
    case 'int16':
      return 2;
    case 'string':
      return flexible ? 1 : 2;
    case 'bytes':
    case 'records':
      return flexible ? 1 : 4;
    case 'int32':
    case 'uint32':
      return 4;
    case 'int64':
    case 'float64':
      return 8;
  }
}

function defaultFor(f: Field, version: number): unknown {
  if (f.defaultValue !== undefined) return f.defaultValue;
  if (inRange(f.nullable, version)) return null;
  const type = f.type;
  if (isArrayType(type)) return [];
  if (isStruct(type)) return decodeDefaults(type, version);
  switch (type) {
    case 'int64':
      return 0n;
    case 'bool':
      return false;
    case 'string':
      return '';
    case 'bytes':
    case 'records':
      return null;
    case 'int8':
    case 'int16':
    case 'int32':
    case 'uint32':
    case 'float64':
      return 0;
  }
}

function decodeDefaults(fields: readonly Field[], version: number): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const f of fields) value[f.key] = defaultFor(f, version);
  return value;
}

/** Decodes `fields` at `version`; `flexible` versions are compact and end each struct with a TAG_BUFFER. */
export function decodeStruct(fields: readonly Field[], version: number, reader: WireReader, flexible = false): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const f of fields) {
    value[f.key] = inRange(f.versions, version) ? decodeValue(f.type, version, reader, inRange(f.nullable, version), f.name, flexible) : defaultFor(f, version);
  }
  if (flexible) reader.skipTaggedFields();
  return value;
}

function decodeValue(type: FieldType, version: number, reader: WireReader, nullable: boolean, name: string, flexible: boolean): unknown {
  if (isArrayType(type)) {
    const element = type.array;
    const minimum = minimumSize(element, version, flexible);
    const count = flexible ? reader.compactArrayCount(minimum, name) : reader.arrayCount(minimum, name);
    if (count === -1) {
      if (!nullable) throw new MalformedMessageError(`${name} is a null array where one is required`);
      return null;
    }
    const items: unknown[] = new Array<unknown>(count);
    for (let i = 0; i < count; i += 1) {
      items[i] = isStruct(element) ? decodeStruct(element, version, reader, flexible) : decodeValue(element, version, reader, false, name, flexible);
    }
    return items;
  }
  if (isStruct(type)) return decodeStruct(type, version, reader, flexible);
  switch (type) {
    case 'int8':
      return reader.int8(name);
    case 'int16':
      return reader.int16(name);
    case 'int32':
      return reader.int32(name);
    case 'uint32':
      return reader.uint32(name);
    case 'int64':
      return reader.int64(name);
    case 'float64':
      return reader.float64(name);
    case 'bool':
      return reader.bool(name);
    case 'string':
      if (flexible) return nullable ? reader.compactNullableString(name) : reader.compactString(name);
      return nullable ? reader.nullableString(name) : reader.string(name);
    case 'bytes':
      if (flexible) return nullable ? reader.compactNullableBytes(name) : reader.compactBytes(name);
      return nullable ? reader.nullableBytes(name) : reader.bytesValue(name);
    case 'records':
      return flexible ? reader.compactNullableBytes(name) : reader.nullableBytes(name);
  }
}

/** Encodes `value` at `version`; `flexible` versions are compact and end each struct with an empty TAG_BUFFER. */
export function encodeStruct(fields: readonly Field[], version: number, value: Record<string, unknown>, writer: WireWriter, flexible = false): void {
  for (const f of fields) {
    if (!inRange(f.versions, version)) continue;
    const fieldValue = value[f.key] === undefined ? defaultFor(f, version) : value[f.key];
    encodeValue(f.type, version, fieldValue, writer, inRange(f.nullable, version), f.name, flexible);
  }
  if (flexible) writer.emptyTaggedFields();
}

function encodeValue(type: FieldType, version: number, value: unknown, writer: WireWriter, nullable: boolean, name: string, flexible: boolean): void {
  if (isArrayType(type)) {
    if (value === null) {
      if (!nullable) throw new TypeError(`${name} may not be null in version ${version}`);
      if (flexible) writer.compactArrayCount(null);
      else writer.int32(-1);
      return;
    }
    const items = value as readonly unknown[];
    if (flexible) writer.compactArrayCount(items.length);
    else writer.int32(items.length);
    const element = type.array;
    for (const item of items) {
      if (isStruct(element)) encodeStruct(element, version, item as Record<string, unknown>, writer, flexible);
      else encodeValue(element, version, item, writer, false, name, flexible);
    }
    return;
  }
  if (isStruct(type)) {
    encodeStruct(type, version, value as Record<string, unknown>, writer, flexible);
    return;
  }
  switch (type) {
    case 'int8':
      writer.int8(value as number);
      return;
    case 'int16':
      writer.int16(value as number);
      return;
    case 'int32':
      writer.int32(value as number);
      return;
    case 'uint32':
      writer.uint32(value as number);
      return;
    case 'int64':
      writer.int64(typeof value === 'bigint' ? value : BigInt(value as number));
      return;
    case 'float64':
      writer.float64(value as number);
      return;
    case 'bool':
      writer.bool(value as boolean);
      return;
    case 'string':
      if (value === null && !nullable) throw new TypeError(`${name} may not be null in version ${version}`);
      if (flexible) writer.compactNullableString(value as string | null);
      else writer.nullableString(value as string | null);
      return;
    case 'bytes':
      if (flexible) writer.compactNullableBytes(value as Buffer | null);
      else writer.nullableBytes(value as Buffer | null);
      return;
    case 'records':
      if (isExternalPart(value)) {
        if (flexible) writer.compactExternal(value);
        else writer.external(value);
      } else if (flexible) writer.compactNullableBytes(value as Buffer | null);
      else writer.nullableBytes(value as Buffer | null);
      return;
  }
}

/** One API: its key, the versions Tributary serves, and the request/response schemas. */
export interface ApiSchema<Request, Response> {
  readonly apiKey: number;
  readonly name: string;
  readonly minVersion: number;
  readonly maxVersion: number;
  /**
   * The versions that are flexible (Kafka's "flexibleVersions", e.g. `versions('9+')`); absent
   * when no served version is. Flexible requests use request header v2 and flexible responses
   * response header v1 (but ApiVersions, see headers.ts).
   */
  readonly flexibleVersions?: VersionRange;
  readonly request: readonly Field[];
  readonly response: readonly Field[];
  /** Type carriers only (never read): the decoded shapes. */
  readonly types?: { request: Request; response: Response };
}

/** Whether `version` of `api` is one of its flexible versions. */
export function isFlexibleVersion(api: { readonly flexibleVersions?: VersionRange }, version: number): boolean {
  return inRange(api.flexibleVersions, version);
}

export function decodeRequestBody<Request, Response>(api: ApiSchema<Request, Response>, version: number, reader: WireReader): Request {
  const value = decodeStruct(api.request, version, reader, isFlexibleVersion(api, version)) as Request;
  if (reader.remaining() !== 0) {
    throw new MalformedMessageError(`${api.name} v${version} request has ${reader.remaining()} unexpected trailing bytes`);
  }
  return value;
}

export function encodeResponseBody<Request, Response>(api: ApiSchema<Request, Response>, version: number, response: Response, writer: WireWriter): void {
  encodeStruct(api.response, version, response as Record<string, unknown>, writer, isFlexibleVersion(api, version));
}

export function encodeRequestBody<Request, Response>(api: ApiSchema<Request, Response>, version: number, request: Request, writer: WireWriter): void {
  encodeStruct(api.request, version, request as Record<string, unknown>, writer, isFlexibleVersion(api, version));
}

export function decodeResponseBody<Request, Response>(api: ApiSchema<Request, Response>, version: number, reader: WireReader): Response {
  return decodeStruct(api.response, version, reader, isFlexibleVersion(api, version)) as Response;
}
