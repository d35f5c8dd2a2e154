/**
 * The mirror origin of a record: the source cluster, source partition and source offset it was
 * copied from, in a record header of every record the mirror writes. The target log then says
 * by itself how far each source partition got, which is what a restarted mirror resumes from
 * (resume-point.ts). Not to be confused with the audit's ORIGIN_HEADER ('tributary.origin'),
 * which names the server a record was created on and is kept as it is.
 *
 * Value (compact, versioned): byte version, byte n + n bytes of the source name (UTF-8,
 * config.ts keeps names to 64 ASCII characters), unsigned LEB128 partition, unsigned LEB128 offset;
 * version 2 adds an unsigned LEB128 gap g: the source partition holds no record in
 * [offset − g, offset) (compaction removed them), so a resume may step over them (resume-point.ts).
 * A record with no gap before it is written as version 1, as before; version 1 reads as gap 0.
 */
import { TributaryError } from '../common/errors.js';
import type { RecordHeader } from '../protocol/records.js';

export const MIRROR_ORIGIN_HEADER = 'tributary.mirror.origin';

const VERSION = 1;
const VERSION_WITH_GAP = 2;
const MAX_SOURCE_BYTES = 255;

export interface MirrorOrigin {
  readonly source: string;
  readonly partition: number;
  readonly offset: bigint;
  /**
   * The source partition holds no record in [from, offset): the mirror's consumer read on from
   * `from` to this record. Absent when it is `offset` (no gap before the record).
   */
  readonly from?: bigint;
}

export function encodeMirrorOrigin(origin: MirrorOrigin): Buffer {
  const name = Buffer.from(origin.source, 'utf8');
  const from = origin.from ?? origin.offset;
  if (name.length === 0 || name.length > MAX_SOURCE_BYTES || !Number.isSafeInteger(origin.partition) || origin.partition < 0 || origin.offset < 0n || from < 0n || from > origin.offset) {
    throw new TributaryError({
      code: 'INVALID_ARGUMENT',
      message: `cannot encode the mirror origin ${origin.source}/${origin.partition}@${origin.offset}: the source name must be 1–${MAX_SOURCE_BYTES} bytes, partition and offset non-negative, and the gap's start (${from}) between 0 and the offset`,
      details: { source: origin.source, partition: origin.partition, offset: origin.offset.toString(), from: from.toString() },
    });
  }
  const bytes: number[] = [from < origin.offset ? VERSION_WITH_GAP : VERSION, name.length, ...name];
  writeUnsigned(bytes, BigInt(origin.partition));
  writeUnsigned(bytes, origin.offset);
  if (from < origin.offset) writeUnsigned(bytes, origin.offset - from);
  return Buffer.from(bytes);
}

/** The origin in a header value; undefined for a value this version cannot read (another writer, a later version). */
export function decodeMirrorOrigin(value: Buffer): MirrorOrigin | undefined {
  const version = value[0];
  if (value.length < 2 || (version !== VERSION && version !== VERSION_WITH_GAP)) return undefined;
  const nameLength = value[1] ?? 0;
  let position = 2 + nameLength;
  if (nameLength === 0 || position > value.length) return undefined;
  const source = value.toString('utf8', 2, position);
  const partition = readUnsigned(value, position);
  if (partition === undefined || partition.value > 0x7fffffffn) return undefined;
  position = partition.next;
  const offset = readUnsigned(value, position);
  if (offset === undefined) return undefined;
  const origin = { source, partition: Number(partition.value), offset: offset.value };
  if (version === VERSION) return offset.next === value.length ? origin : undefined;
  const gap = readUnsigned(value, offset.next);
  if (gap === undefined || gap.next !== value.length || gap.value === 0n || gap.value > offset.value) return undefined;
  return { ...origin, from: offset.value - gap.value };
}

/** The record's mirror origin, if it has a readable one. */
export function mirrorOriginOf(headers: readonly RecordHeader[]): MirrorOrigin | undefined {
  for (const header of headers) if (header.key === MIRROR_ORIGIN_HEADER) return header.value === null ? undefined : decodeMirrorOrigin(header.value);
  return undefined;
}

/**
 * The headers with this mirror's origin: a mirror origin the record already had (it came through
 * another mirror) is replaced, since the target's resume point must name this hop's source.
 */
export function withMirrorOrigin(headers: readonly RecordHeader[], origin: MirrorOrigin): RecordHeader[] {
  return [...headers.filter((header) => header.key !== MIRROR_ORIGIN_HEADER), { key: MIRROR_ORIGIN_HEADER, value: encodeMirrorOrigin(origin) }];
}

function writeUnsigned(bytes: number[], value: bigint): void {
  let rest = value;
  while (rest >= 0x80n) {
    bytes.push(Number(rest & 0x7fn) | 0x80);
    rest >>= 7n;
  }
  bytes.push(Number(rest));
}

/** At most 10 bytes (64 bits); undefined when cut off or too long. */
function readUnsigned(bytes: Buffer, start: number): { value: bigint; next: number } | undefined {
  let value = 0n;
  for (let index = 0; index < 10; index += 1) {
    const byte = bytes[start + index];
    if (byte === undefined) return undefined;
    value |= BigInt(byte & 0x7f) << BigInt(7 * index);
    if ((byte & 0x80) === 0) return { value, next: start + index + 1 };
  }
  return undefined;
}
