/**
 * In-process fakes for the loader's unit tests: a warehouse in memory with the semantics of
 * src/etl/warehouse/warehouse.ts (no overwrite, rename refuses an existing target, sorted
 * listings), and a cluster of partitions held as arrays of records.
 */
import { Readable } from 'node:stream';
import { createLogger } from '../../../src/common/logger.js';
import type { TopicSelector } from '../../../src/etl/load-file.js';
import type { LoadSource, PartitionBounds, SourceBatch, SourceRecord } from '../../../src/etl/load/source.js';
import { warehouseError } from '../../../src/etl/warehouse/errors.js';
import { compareNames, parseWarehousePath } from '../../../src/etl/warehouse/paths.js';
import type { WarehouseData, WarehouseEntry, WarehouseFileSystem } from '../../../src/etl/warehouse/warehouse.js';

export const quietLogger = createLogger({ name: 'test', level: 'silent' });

async function bytesOf(data: WarehouseData): Promise<Buffer> {
  if (Buffer.isBuffer(data)) return data;
  const chunks: Buffer[] = [];
  for await (const chunk of data) chunks.push(chunk);
  return Buffer.concat(chunks);
}

export class MemoryWarehouse implements WarehouseFileSystem {
  readonly files = new Map<string, Buffer>();
  readonly directories = new Set<string>(['']);
  /** Every mutation, in order: `create p`, `rename a -> b`, `delete p`. */
  readonly operations: string[] = [];

  private normal(path: string, operation: string): string {
    return parseWarehousePath(path, operation, 'memory warehouse').normal;
  }

  private fail(code: Parameters<typeof warehouseError>[0], operation: string, path: string): never {
    throw warehouseError(code, { operation, path, location: `memory:/${path}` });
  }

  private makeParents(path: string): void {
    const segments = path.split('/');
    for (let length = 1; length < segments.length; length += 1) {
      const parent = segments.slice(0, length).join('/');
      if (this.files.has(parent)) this.fail('WAREHOUSE_PARENT_NOT_DIRECTORY', 'create', path);
      this.directories.add(parent);
    }
  }

  private exists(path: string): boolean {
    return this.files.has(path) || this.directories.has(path);
  }

  async create(path: string, data: WarehouseData): Promise<void> {
    const at = this.normal(path, 'create');
    if (this.exists(at)) this.fail('WAREHOUSE_FILE_EXISTS', 'create', at);
    const bytes = await bytesOf(data);
    this.makeParents(at);
    this.files.set(at, Buffer.from(bytes));
    this.operations.push(`create ${at}`);
  }

  async rename(from: string, to: string): Promise<void> {
    const source = this.normal(from, 'rename');
    const target = this.normal(to, 'rename');
    if (!this.exists(source)) this.fail('WAREHOUSE_NOT_FOUND', 'rename', source);
    if (this.exists(target)) this.fail('WAREHOUSE_FILE_EXISTS', 'rename', target);
    this.makeParents(target);
    const file = this.files.get(source);
    if (file !== undefined) {
      this.files.delete(source);
      this.files.set(target, file);
    } else {
      for (const [path, bytes] of [...this.files]) {
        if (path.startsWith(`${source}/`)) {
          this.files.delete(path);
          this.files.set(`${target}${path.slice(source.length)}`, bytes);
        }
      }
      for (const directory of [...this.directories]) {
        if (directory === source || directory.startsWith(`${source}/`)) {
          this.directories.delete(directory);
          this.directories.add(`${target}${directory.slice(source.length)}`);
        }
      }
    }
    this.operations.push(`rename ${source} -> ${target}`);
  }

  async mkdirs(path: string): Promise<void> {
    const at = this.normal(path, 'mkdirs');
    if (this.files.has(at)) this.fail('WAREHOUSE_FILE_EXISTS', 'mkdirs', at);
    this.makeParents(`${at}/x`);
  }

  async list(path: string): Promise<WarehouseEntry[]> {
    const at = this.normal(path, 'list');
    if (this.files.has(at)) this.fail('WAREHOUSE_NOT_A_DIRECTORY', 'list', at);
    if (!this.directories.has(at)) this.fail('WAREHOUSE_NOT_FOUND', 'list', at);
    const prefix = at === '' ? '' : `${at}/`;
    const names = new Map<string, WarehouseEntry>();
    for (const [file, bytes] of this.files) {
      const rest = file.startsWith(prefix) ? file.slice(prefix.length) : undefined;
      if (rest !== undefined && !rest.includes('/')) names.set(rest, { name: rest, path: file, type: 'file', length: bytes.length, modifiedAt: 0 });
    }
    for (const directory of this.directories) {
      const rest = directory.startsWith(prefix) && directory !== at ? directory.slice(prefix.length) : undefined;
      if (rest !== undefined && rest !== '' && !rest.includes('/')) names.set(rest, { name: rest, path: directory, type: 'directory', length: 0, modifiedAt: 0 });
    }
    return [...names.values()].sort((a, b) => compareNames(a.name, b.name));
  }

  async open(path: string): Promise<Buffer> {
    const at = this.normal(path, 'open');
    const file = this.files.get(at);
    if (file === undefined) this.fail(this.directories.has(at) ? 'WAREHOUSE_NOT_A_FILE' : 'WAREHOUSE_NOT_FOUND', 'open', at);
    return Buffer.from(file);
  }

  async openStream(path: string): Promise<Readable> {
    return Readable.from([await this.open(path)]);
  }

  async stat(path: string): Promise<WarehouseEntry | undefined> {
    const at = this.normal(path, 'stat');
    const name = at.split('/').at(-1) ?? '';
    const file = this.files.get(at);
    if (file !== undefined) return { name, path: at, type: 'file', length: file.length, modifiedAt: 0 };
    return this.directories.has(at) ? { name, path: at, type: 'directory', length: 0, modifiedAt: 0 } : undefined;
  }

  async delete(path: string, options: { readonly recursive?: boolean } = {}): Promise<boolean> {
    const at = this.normal(path, 'delete');
    if (this.files.delete(at)) {
      this.operations.push(`delete ${at}`);
      return true;
    }
    if (!this.directories.has(at)) return false;
    const inside = (candidate: string): boolean => candidate.startsWith(`${at}/`);
    if (!options.recursive && ([...this.files.keys()].some(inside) || [...this.directories].some(inside))) this.fail('WAREHOUSE_DIRECTORY_NOT_EMPTY', 'delete', at);
    for (const file of [...this.files.keys()]) if (inside(file)) this.files.delete(file);
    for (const directory of [...this.directories]) if (inside(directory) || directory === at) this.directories.delete(directory);
    this.operations.push(`delete ${at}`);
    return true;
  }

  describe(path = ''): string {
    return `memory:/${path}`;
  }

  /** Files under `prefix`, sorted. */
  filesUnder(prefix: string): string[] {
    return [...this.files.keys()].filter((path) => path.startsWith(prefix)).sort();
  }
}

export interface FakePartition {
  logStart: number;
  records: SourceRecord[];
}

/** A cluster in memory: topic → partitions, records at consecutive offsets from logStart. */
export class FakeSource implements LoadSource {
  readonly partitionsByTopic = new Map<string, FakePartition[]>();
  fetches = 0;
  /**
   * A leader just elected in a failover: its next `looks` answers (fetches and bounds, any
   * partition) give this high watermark, below the records it holds, and nothing at or above it.
   */
  lagging: { highWatermark: number; looks: number } | undefined;

  addTopic(topic: string, partitions: number): void {
    this.partitionsByTopic.set(topic, Array.from({ length: partitions }, () => ({ logStart: 0, records: [] })));
  }

  append(topic: string, partition: number, value: Buffer | null, timestamp: number): number {
    const log = this.log(topic, partition);
    const offset = log.logStart + log.records.length;
    log.records.push({ offset, timestamp, key: null, value });
    return offset;
  }

  /** Retention: drops records below `offset`. */
  deleteBefore(topic: string, partition: number, offset: number): void {
    const log = this.log(topic, partition);
    log.records = log.records.filter((record) => record.offset >= offset);
    log.logStart = offset;
  }

  private log(topic: string, partition: number): FakePartition {
    const log = this.partitionsByTopic.get(topic)?.[partition];
    if (log === undefined) throw new Error(`no partition ${topic}-${partition}`);
    return log;
  }

  async topics(selector: TopicSelector): Promise<string[]> {
    const names = [...this.partitionsByTopic.keys()];
    if (selector.kind === 'list') {
      for (const name of selector.names) if (!this.partitionsByTopic.has(name)) throw new Error(`unknown topic ${name}`);
      return [...selector.names].sort();
    }
    return names.filter((name) => selector.pattern.test(name)).sort();
  }

  async partitions(topic: string): Promise<number[]> {
    return (this.partitionsByTopic.get(topic) ?? []).map((_, index) => index);
  }

  /** The high watermark an answer gives now (a lagging one while `lagging` has looks left). */
  private highWatermarkOf(log: FakePartition): number {
    const lagging = this.lagging;
    if (lagging !== undefined && lagging.looks > 0) {
      lagging.looks -= 1;
      return lagging.highWatermark;
    }
    return log.logStart + log.records.length;
  }

  async bounds(topic: string, partition: number): Promise<PartitionBounds> {
    const log = this.log(topic, partition);
    return { logStart: log.logStart, highWatermark: this.highWatermarkOf(log) };
  }

  async fetch(topic: string, partition: number, offset: number, maxBytes: number): Promise<SourceBatch> {
    this.fetches += 1;
    const log = this.log(topic, partition);
    const highWatermark = this.highWatermarkOf(log);
    const records: SourceRecord[] = [];
    let bytes = 0;
    for (const record of log.records) {
      if (record.offset < offset) continue;
      if (record.offset >= highWatermark) break;
      bytes += (record.value?.length ?? 0) + 20;
      if (bytes > maxBytes && records.length > 0) break;
      records.push(record);
      if (records.length >= 50) break; // small batches: the task must loop
    }
    const last = records.at(-1);
    return { records, nextOffset: last === undefined ? offset : last.offset + 1, logStart: log.logStart, highWatermark };
  }

  close(): void {}
}
