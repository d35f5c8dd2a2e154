/**
 * What the loader's unit tests share: a registry server holding the test topic's schemas, and a
 * load definition that writes to the in-memory warehouse (loader-fakes.ts).
 */
import { DEFAULT_MEMORY_BUDGET_BYTES } from '../../../src/etl/load/memory-budget.js';
import { DEFAULT_ROW_GROUP_BYTES } from '../../../src/etl/files/parquet-file.js';
import { afterAll, beforeAll } from 'vitest';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import type { RegistryClient } from '../../../src/registry/client.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { startTestRegistry, type TestRegistry } from '../registry/serde-registry.js';

export interface LoaderRegistry {
  readonly url: string;
  readonly client: RegistryClient;
  readonly serializer: AvroSerializer;
}

/** Starts a registry before the file's tests with `schemas` registered under `subject`, in order; stops it after. */
export function useLoaderRegistry(subject: string, schemas: readonly string[]): LoaderRegistry {
  let started: { registry: TestRegistry; client: RegistryClient; serializer: AvroSerializer } | undefined;
  beforeAll(async () => {
    const registry = await startTestRegistry();
    const client = registry.client();
    for (const schema of schemas) await client.register(subject, schema);
    started = { registry, client, serializer: new AvroSerializer(client) };
  });
  afterAll(async () => {
    await started?.registry.close();
  });
  const get = (): NonNullable<typeof started> => {
    if (started === undefined) throw new Error('the test registry is used outside its tests');
    return started;
  };
  return {
    get url() {
      return get().registry.url;
    },
    get client() {
      return get().client;
    },
    get serializer() {
      return get().serializer;
    },
  };
}

/** A load of `topic` from a nominal cluster into the in-memory warehouse, event time in `time`. */
export function memoryLoad(topic: string, registryUrl: string, overrides: Partial<LoadDefinition> = {}): LoadDefinition {
  return {
    file: '/jobs/views.yaml',
    name: 'views',
    source: { bootstrap: ['127.0.0.1:9092'] },
    topics: { kind: 'list', names: [topic] },
    registry: registryUrl,
    warehouse: { url: 'memory', root: 'wh', baseDirectory: '/jobs' },
    format: 'avro',
    codec: 'deflate',
    timeField: 'time',
    maxRecordsPerRun: 1_000_000,
    maxRecordsPerTask: 1_000_000,
    memoryBudget: DEFAULT_MEMORY_BUDGET_BYTES,
    rowGroupBytes: DEFAULT_ROW_GROUP_BYTES,
    parquetEncoderThread: false,
    quarantine: { maxRecords: 0 },
    latenessHorizonMs: 7_200_000,
    layout: 'hourly',
    ...overrides,
  };
}
