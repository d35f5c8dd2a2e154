/**
 * What the replay unit tests share: a real registry server in this process, the loader's
 * in-process fakes (memory warehouse, fake cluster), a load whose transformation maps `page` from
 * the wrong field (`url`) and its fix (`page`), records spread over three event hours, and
 * snapshots of warehouse folders to compare bytes.
 */
import { createHash } from 'node:crypto';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import type { CoordinationStore } from '../../../src/coordination/store.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { parseLoadFile } from '../../../src/etl/load-file.js';
import type { ReplayOptions } from '../../../src/etl/replay/replay.js';
import type { ReplayManifest } from '../../../src/etl/replay/manifest.js';
import type { RollbackOptions } from '../../../src/etl/replay/rollback.js';
import type { SwapReport } from '../../../src/etl/replay/session.js';
import { runLoad, type RunReport } from '../../../src/etl/load/run.js';
import type { LoadSource } from '../../../src/etl/load/source.js';
import type { WarehouseData, WarehouseEntry, WarehouseFileSystem } from '../../../src/etl/warehouse/warehouse.js';
import type { RegistryClient } from '../../../src/registry/client.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { MemoryWarehouse, quietLogger, type FakeSource } from './loader-fakes.js';

export const TOPIC = 'views';
export const HOUR = 3_600_000;
export const T0 = Date.UTC(2026, 10, 29, 10);
/** The three event hours the records fall in, as manifests name them. */
export const HOURS = ['2026-11-29T10', '2026-11-29T11', '2026-11-29T12'] as const;
export const ROOT = 'wh';

export const SCHEMA = JSON.stringify({
  type: 'record',
  name: 'View',
  namespace: 'test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'time', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'url', type: 'string' },
    { name: 'page', type: 'string', doc: 'The page template.' },
  ],
});

/** The mapping bug: `page` read from `url`. */
export const BUGGY = 'transform:\n  fields:\n    id: id\n    time: time\n    page: url\n';
/** The fix. */
export const FIXED = 'transform:\n  fields:\n    id: id\n    time: time\n    page: page\n';

export function loadWith(registryUrl: string, section: string, overrides: Partial<LoadDefinition> = {}): LoadDefinition {
  const text = [
    'name: views',
    'source: { bootstrap: [127.0.0.1:9092] }',
    `topics: [${TOPIC}]`,
    `registry: ${registryUrl}`,
    `warehouse: { url: memory, root: ${ROOT} }`,
    'format: avro',
    'codec: deflate',
    'timeField: time',
    section,
  ].join('\n');
  return { ...parseLoadFile(text, '/jobs/views.yaml'), ...overrides };
}

export interface Produced {
  readonly partition: number;
  readonly offset: number;
  readonly id: number;
  readonly hour: string;
}

/** `count` records over `partitions` and the three hours (or `hour`, 0–2, for all of them). */
export async function produce(source: FakeSource, registry: RegistryClient, count: number, partitions: number, firstId = 0, hour?: number): Promise<Produced[]> {
  const serializer = new AvroSerializer(registry);
  const produced: Produced[] = [];
  for (let index = 0; index < count; index += 1) {
    const id = firstId + index;
    const partition = id % partitions;
    const offsetInHours = hour === undefined ? (id * 2_654_435) % (3 * HOUR) : hour * HOUR + ((id * 7_919) % HOUR);
    const time = T0 + offsetInHours;
    const bytes = await serializer.encode(`${TOPIC}-value`, { id, time, url: `/u/${id}`, page: `page-${id % 5}` }, SCHEMA);
    produced.push({ partition, offset: source.append(TOPIC, partition, bytes, time), id, hour: HOURS[Math.floor(offsetInHours / HOUR)]! });
  }
  return produced;
}

export function hourFolder(hour: string): string {
  return `${ROOT}/${TOPIC}/hourly/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}`;
}

export function versionFolder(hour: string, version: number): string {
  return `${ROOT}/_etl/views/versions/${TOPIC}/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}/${version}`;
}

/** path (relative to `prefix`) → sha256 of every file under it. */
export function snapshot(warehouse: MemoryWarehouse, prefix: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const path of warehouse.filesUnder(`${prefix}/`)) files[path.slice(prefix.length + 1)] = createHash('sha256').update(warehouse.files.get(path)!).digest('hex');
  return files;
}

/** A separate warehouse holding the same files and folders. */
export function copyOf(warehouse: MemoryWarehouse): MemoryWarehouse {
  const copy = new MemoryWarehouse();
  for (const [path, bytes] of warehouse.files) copy.files.set(path, Buffer.from(bytes));
  for (const directory of warehouse.directories) copy.directories.add(directory);
  return copy;
}

export class Crash extends Error {
  constructor() {
    super('crash (test)');
  }
}

/**
 * A warehouse that dies at its n-th mutation (create, rename, delete, mkdirs): that operation and
 * every later one throw, as if the process had been killed there.
 */
export class CrashingWarehouse implements WarehouseFileSystem {
  mutations = 0;
  crashed = false;

  constructor(
    readonly inner: MemoryWarehouse,
    private readonly crashAt: number,
  ) {}

  private mutate(): void {
    this.check();
    this.mutations += 1;
    if (this.mutations === this.crashAt) {
      this.crashed = true;
      throw new Crash();
    }
  }

  private check(): void {
    if (this.crashed) throw new Crash();
  }

  async create(path: string, data: WarehouseData): Promise<void> {
    this.mutate();
    return this.inner.create(path, data);
  }

  async rename(from: string, to: string): Promise<void> {
    this.mutate();
    return this.inner.rename(from, to);
  }

  async mkdirs(path: string): Promise<void> {
    this.mutate();
    return this.inner.mkdirs(path);
  }

  async delete(path: string, options?: { readonly recursive?: boolean }): Promise<boolean> {
    this.mutate();
    return this.inner.delete(path, options);
  }

  async list(path: string): Promise<WarehouseEntry[]> {
    this.check();
    return this.inner.list(path);
  }

  async open(path: string): Promise<Buffer> {
    this.check();
    return this.inner.open(path);
  }

  async openStream(path: string): ReturnType<WarehouseFileSystem['openStream']> {
    this.check();
    return this.inner.openStream(path);
  }

  async stat(path: string): Promise<WarehouseEntry | undefined> {
    this.check();
    return this.inner.stat(path);
  }

  describe(path?: string): string {
    return this.inner.describe(path);
  }
}

export interface Services {
  readonly registry: RegistryClient;
  readonly source: LoadSource;
  readonly store?: CoordinationStore;
}

export function runOnce(load: LoadDefinition, warehouse: WarehouseFileSystem, services: Services): Promise<RunReport> {
  return runLoad({
    load,
    warehouse,
    source: services.source,
    registry: services.registry,
    logger: quietLogger,
    acceptGap: false,
    store: services.store ?? new MemoryCoordination().session(),
    numberRuns: false,
    now: () => new Date('2026-11-29T17:00:00Z'),
  });
}

export function replayOptions(load: LoadDefinition, warehouse: WarehouseFileSystem, services: Services, from: string, to: string, extra: Partial<ReplayOptions> = {}): ReplayOptions {
  return {
    load,
    warehouse,
    source: services.source,
    registry: services.registry,
    logger: quietLogger,
    store: services.store ?? new MemoryCoordination().session(),
    numberRuns: false,
    from: new Date(`${from}:00:00Z`),
    to: new Date(`${to}:00:00Z`),
    reason: 'page came from url',
    now: () => new Date('2026-11-30T09:00:00Z'),
    ...extra,
  };
}

export function rollbackOptions(load: LoadDefinition, warehouse: WarehouseFileSystem, hour: string, extra: Partial<RollbackOptions> = {}): RollbackOptions {
  return {
    load,
    warehouse,
    logger: quietLogger,
    store: new MemoryCoordination().session(),
    numberRuns: false,
    from: new Date(`${hour}:00:00Z`),
    to: new Date(Date.parse(`${hour}:00:00Z`) + HOUR),
    now: () => new Date('2026-11-30T10:00:00Z'),
    ...extra,
  };
}

/** The manifest of a report that swapped hours (or finished a claimed swap); throws for one that changed nothing. */
export function swappedManifest(report: SwapReport): ReplayManifest {
  if (report.manifest === undefined) throw new Error(`expected a swap, but the ${report.request.kind} changed nothing (${report.unchanged.map((hour) => `${hour.hour}: ${hour.why}`).join(', ')})`);
  return report.manifest;
}
