/**
 * The mirror's own ZooKeeper nodes beside its group's offsets, one per source partition:
 *
 * - `/consumers/<group>/mirror/positions/<topic>/<partition>`: where the last commit stands in the
 *   target, `{"sourceEnd","targetPartition","targetOffset"}` (source records below sourceEnd are
 *   at target offsets ≤ targetOffset). Written in the transaction of the offset commit; it bounds
 *   the resume search (resume-point.ts).
 * - `/consumers/<group>/mirror/audit/<topic>/<partition>`: the source range `{"from","to","records"}`
 *   whose audit counts are being published, and how many records they count (absent in nodes
 *   written before it); every count below `from` is published (range-audit.ts).
 */
import { consumerGroupPath, pathSegment } from '../coordination/paths.js';
import { hasCode, type CoordinationStore } from '../coordination/store.js';
import type { CoveredPosition } from './resume-point.js';

export interface TargetPosition extends CoveredPosition {
  readonly targetPartition: number;
}

export interface CountedRange {
  readonly from: bigint;
  readonly to: bigint;
  /** Records the range's counts count; undefined in a node written before it was recorded. */
  readonly records?: number;
}

export function positionPath(group: string, topic: string, partition: number): string {
  return `${consumerGroupPath(group)}/mirror/positions/${pathSegment('topic', topic)}/${partition}`;
}

export function countedRangePath(group: string, topic: string, partition: number): string {
  return `${consumerGroupPath(group)}/mirror/audit/${pathSegment('topic', topic)}/${partition}`;
}

export function encodePosition(position: TargetPosition): Buffer {
  return Buffer.from(JSON.stringify({ sourceEnd: position.sourceEnd.toString(), targetPartition: position.targetPartition, targetOffset: position.targetOffset.toString() }));
}

/** The position in a node; undefined when absent or unreadable (the search then goes without a bound). */
export async function readPosition(store: CoordinationStore, path: string): Promise<TargetPosition | undefined> {
  const parsed = parse(await store.get(path));
  if (parsed === undefined) return undefined;
  const { sourceEnd, targetPartition, targetOffset } = parsed;
  if (!isOffset(sourceEnd) || !isOffset(targetOffset) || typeof targetPartition !== 'number' || !Number.isSafeInteger(targetPartition)) return undefined;
  return { sourceEnd: BigInt(sourceEnd), targetPartition, targetOffset: BigInt(targetOffset) };
}

export async function readCountedRange(store: CoordinationStore, path: string): Promise<CountedRange | undefined> {
  const parsed = parse(await store.get(path));
  if (parsed === undefined || !isOffset(parsed['from']) || !isOffset(parsed['to'])) return undefined;
  const records = parsed['records'];
  const range = { from: BigInt(parsed['from']), to: BigInt(parsed['to']), ...(typeof records === 'number' && Number.isSafeInteger(records) && records >= 0 ? { records } : {}) };
  return range.from <= range.to ? range : undefined;
}

/** Writes the node, creating it (and its parents) the first time. */
export async function writeNode(store: CoordinationStore, path: string, data: Buffer): Promise<void> {
  if (await store.exists(path)) {
    await store.set(path, data);
    return;
  }
  await store.ensurePath(path.slice(0, path.lastIndexOf('/')));
  try {
    await store.create(path, data, 'persistent');
  } catch (error) {
    if (!hasCode(error, 'NODE_EXISTS')) throw error;
    await store.set(path, data);
  }
}

export function encodeCountedRange(range: CountedRange): Buffer {
  return Buffer.from(JSON.stringify({ from: range.from.toString(), to: range.to.toString(), ...(range.records === undefined ? {} : { records: range.records }) }));
}

function parse(node: { readonly data: Buffer } | undefined): Record<string, unknown> | undefined {
  if (node === undefined) return undefined;
  try {
    const value = JSON.parse(node.data.toString('utf8')) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const isOffset = (value: unknown): value is string => typeof value === 'string' && /^\d+$/.test(value);
