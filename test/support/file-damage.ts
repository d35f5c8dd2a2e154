/**
 * Damage to a stopped broker's data dir, for the torn-and-corrupt-files fault runs (issue #22;
 * reliability reference §2.2 and §8.1): the files a crash or a bad disk leaves behind.
 *
 *   segment-tail-cut         the active segment cut at a random length (a torn write)
 *   segment-overwrite        1–1024 random bytes XORed into the active segment (every byte changes)
 *   offset-index-overwrite   the same in a segment's .index      (any segment of the partition)
 *   time-index-overwrite     the same in a segment's .timeindex  (any segment of the partition)
 *   producer-snapshot-overwrite   the same in a producer-state snapshot
 *   checkpoint-overwrite     the same in a data-dir checkpoint (recovery point, log start, …)
 *
 * Only the active segment's data is damaged: segments below the recovery point are trusted as
 * written, as in Kafka (a broker checks them when a client reads, not at start). For segment
 * damage the report names the first offset whose batch holds a damaged byte: everything before it
 * must survive recovery unchanged, everything from it on may be cut. Other damage must lose
 * nothing at all (those files are rebuilt or re-derived from the segments).
 */
import { readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BATCH_LENGTH_OFFSET, LOG_OVERHEAD } from '../../src/protocol/record-batch.js';

export const DAMAGE_KINDS = [
  'segment-tail-cut',
  'segment-overwrite',
  'offset-index-overwrite',
  'time-index-overwrite',
  'producer-snapshot-overwrite',
  'checkpoint-overwrite',
] as const;
export type DamageKind = (typeof DAMAGE_KINDS)[number];

export interface Damage {
  readonly kind: DamageKind;
  /** Path relative to the data dir. */
  readonly file: string;
  /** The partition folder's topic and partition, when the file belongs to one. */
  readonly topic: string | undefined;
  readonly partition: number | undefined;
  /** First damaged byte (for a cut: the new length). */
  readonly at: number;
  /** Bytes changed (for a cut: bytes removed). */
  readonly length: number;
  /** Segment damage: the base offset of the first batch holding a damaged byte (undefined: none did). */
  readonly firstDamagedOffset: bigint | undefined;
}

/** A batch of a segment file: where it starts, its size, its base offset. */
export interface StoredBatchSpan {
  readonly position: number;
  readonly size: number;
  readonly baseOffset: bigint;
}

/** The whole batches of a segment file, from its start (a torn tail is left out). */
export function batchSpans(bytes: Buffer): StoredBatchSpan[] {
  const spans: StoredBatchSpan[] = [];
  let position = 0;
  while (position + LOG_OVERHEAD <= bytes.length) {
    const size = bytes.readInt32BE(position + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
    if (size <= LOG_OVERHEAD || position + size > bytes.length) break;
    spans.push({ position, size, baseOffset: bytes.readBigInt64BE(position) });
    position += size;
  }
  return spans;
}

/** The base offset of the first batch that has a byte at or after `position`, if any. */
function firstBatchFrom(spans: readonly StoredBatchSpan[], position: number): bigint | undefined {
  return spans.find((span) => span.position + span.size > position)?.baseOffset;
}

interface Candidate {
  readonly kind: DamageKind;
  readonly file: string;
  readonly topic: string | undefined;
  readonly partition: number | undefined;
}

const PARTITION_FOLDER = /^(.+)-(\d+)$/;

/** The files of `dataDir` each damage kind could hit (non-empty files only). */
export function damageCandidates(dataDir: string, topics?: ReadonlySet<string>): Candidate[] {
  const candidates: Candidate[] = [];
  for (const entry of readdirSync(dataDir, { withFileTypes: true })) {
    if (entry.isFile()) {
      if (entry.name.endsWith('checkpoint') && statSync(join(dataDir, entry.name)).size > 0) {
        candidates.push({ kind: 'checkpoint-overwrite', file: entry.name, topic: undefined, partition: undefined });
      }
      continue;
    }
    const match = PARTITION_FOLDER.exec(entry.name);
    if (!entry.isDirectory() || match?.[1] === undefined || match[2] === undefined) continue;
    const topic = match[1];
    if (topics !== undefined && !topics.has(topic)) continue;
    const partition = Number(match[2]);
    const files = readdirSync(join(dataDir, entry.name)).sort();
    const size = (name: string): number => statSync(join(dataDir, entry.name, name)).size;
    const segments = files.filter((name) => name.endsWith('.log') && size(name) > 0);
    const active = segments.at(-1);
    const add = (kind: DamageKind, name: string): void => void candidates.push({ kind, file: join(entry.name, name), topic, partition });
    if (active !== undefined) {
      add('segment-tail-cut', active);
      add('segment-overwrite', active);
    }
    for (const name of files) {
      if (size(name) === 0) continue;
      if (name.endsWith('.index')) add('offset-index-overwrite', name);
      else if (name.endsWith('.timeindex')) add('time-index-overwrite', name);
      else if (name.endsWith('.snapshot')) add('producer-snapshot-overwrite', name);
    }
  }
  return candidates;
}

/**
 * Damages one file of `dataDir` (the broker must be stopped): a kind chosen among `kinds` that has
 * a file to hit (`prefer` when it has one), then a file of that kind, then the bytes. `random`
 * returns [0, 1).
 */
export function damageDataDir(
  dataDir: string,
  random: () => number,
  options: { readonly kinds?: readonly DamageKind[]; readonly topics?: ReadonlySet<string>; readonly prefer?: DamageKind } = {},
): Damage | undefined {
  const wanted = new Set(options.kinds ?? DAMAGE_KINDS);
  const candidates = damageCandidates(dataDir, options.topics).filter((candidate) => wanted.has(candidate.kind));
  const kinds = [...new Set(candidates.map((candidate) => candidate.kind))];
  const kind = options.prefer !== undefined && kinds.includes(options.prefer) ? options.prefer : kinds[Math.floor(random() * kinds.length)];
  if (kind === undefined) return undefined;
  const ofKind = candidates.filter((candidate) => candidate.kind === kind);
  const target = ofKind[Math.floor(random() * ofKind.length)];
  if (target === undefined) return undefined;
  const path = join(dataDir, target.file);
  const bytes = readFileSync(path);
  const spans = kind === 'segment-tail-cut' || kind === 'segment-overwrite' ? batchSpans(bytes) : [];
  if (kind === 'segment-tail-cut') {
    const at = Math.floor(random() * bytes.length);
    truncateSync(path, at);
    return { ...target, at, length: bytes.length - at, firstDamagedOffset: firstBatchFrom(spans, at) };
  }
  const length = Math.min(bytes.length, 1 + Math.floor(random() * 1024));
  const at = Math.floor(random() * (bytes.length - length + 1));
  for (let index = at; index < at + length; index += 1) bytes[index] = (bytes[index] ?? 0) ^ (1 + Math.floor(random() * 255));
  writeFileSync(path, bytes);
  return { ...target, at, length, firstDamagedOffset: spans.length === 0 ? undefined : firstBatchFrom(spans, at) };
}

export function describeDamage(damage: Damage): string {
  const where = damage.kind === 'segment-tail-cut' ? `cut to ${damage.at} bytes (${damage.length} removed)` : `${damage.length} bytes from byte ${damage.at}`;
  const from = damage.firstDamagedOffset === undefined ? '' : `, batches from offset ${damage.firstDamagedOffset} hit`;
  return `${damage.kind} ${damage.file}: ${where}${from}`;
}
