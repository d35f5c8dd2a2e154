/**
 * Avro payload fuzzing (issue #22, hostile input), at the loader's decode step: framed payloads
 * (magic byte 0 + schema id + Avro datum) of random values of a set of writer schemas registered
 * in a real `tributary registry start` process, valid and broken (test/support/avro-mutations.ts),
 * decoded by the AvroDeserializer exactly as the loader's decode loop does (src/etl/load/extract.ts:
 * decodeSync after the ids were prefetched, decode otherwise, isRecordFailure decides quarantine).
 *
 * Invariants: no crash; memory bounded (peak RSS of this process reported; a declared 2^31 count
 * allocates nothing); every valid payload decodes to the value it was written from; every broken
 * one either fails with a record failure (the loader quarantines it with that code and message)
 * or decodes to exactly what reference avsc reads from the same bytes (a mutation that is still
 * valid Avro); nothing else (an error the loader would not quarantine fails its task).
 *
 * The same payloads end to end (produced into topics of a broker process, loaded by `tributary
 * etl run` into a warehouse, checked from its files): test/chaos/avro-fuzz-loader.ts, scenario
 * fuzz-avro-loader.
 */
import avro from 'avsc';
import { isDeepStrictEqual } from 'node:util';
import { RegistryClient } from '../../src/registry/client.js';
import { AvroDeserializer } from '../../src/registry/serde/deserializer.js';
import { FRAME_HEADER_BYTES, schemaIdOf } from '../../src/registry/serde/framing.js';
import { isRecordFailure } from '../../src/etl/load/quarantine.js';
import { drawPayload, MUTATIONS, newPayloadTally, type Mutation } from '../support/avro-mutations.js';
import { peakResidentBytes, residentBytes, resetPeakResident } from '../support/process-memory.js';
import { seededRandom } from '../support/seeded-random.js';
import { startRegistryProcess } from './registry-fuzz-process.js';

export const FUZZ_SCHEMAS: readonly unknown[] = [
  { type: 'record', name: 'Ints', fields: [{ name: 'values', type: { type: 'array', items: 'int' } }, { name: 'n', type: 'long' }] },
  { type: 'record', name: 'Nulls', fields: [{ name: 'values', type: { type: 'array', items: 'null' } }, { name: 's', type: 'string' }] },
  { type: 'record', name: 'Maps', fields: [{ name: 'm', type: { type: 'map', values: { type: 'array', items: 'string' } } }, { name: 'b', type: 'bytes' }] },
  {
    type: 'record',
    name: 'Event',
    namespace: 'fuzz',
    fields: [
      { name: 'id', type: 'string' },
      { name: 'time', type: 'long' },
      { name: 'kind', type: { type: 'enum', name: 'Kind', symbols: ['A', 'B', 'C'] } },
      { name: 'hash', type: { type: 'fixed', name: 'Hash', size: 8 } },
      { name: 'tags', type: ['null', { type: 'array', items: 'string' }], default: null },
      { name: 'score', type: ['null', 'double', 'string'], default: null },
      { name: 'child', type: ['null', { type: 'record', name: 'Child', fields: [{ name: 'x', type: 'float' }, { name: 'ok', type: 'boolean' }] }], default: null },
    ],
  },
  { type: 'record', name: 'List', fields: [{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'List'] }] },
];

export interface AvroFuzzOptions {
  readonly folder: string;
  readonly payloads: number;
  readonly seed: number;
  /** Of the payloads, how many are broken (0..1); default 0.7. */
  readonly brokenShare?: number;
  readonly say?: (line: string) => void;
}

export interface AvroFuzzResult {
  readonly payloads: number;
  readonly valid: number;
  readonly validDecoded: number;
  readonly broken: number;
  readonly byMutation: Readonly<Record<Mutation, number>>;
  /** Broken payloads that failed with a record failure, by code: the loader quarantines these. */
  readonly quarantined: Readonly<Record<string, number>>;
  /** Broken payloads that are still valid Avro and decoded as reference avsc reads them. */
  readonly stillValid: number;
  /** Of those, ones avsc itself refuses (a 10-byte long varint Avro Java reads the same way). */
  readonly avscRefuses: number;
  readonly rssBeforeBytes: number;
  readonly peakRssBytes: number;
  readonly seconds: number;
  readonly violations: readonly string[];
}

export async function runAvroFuzz(options: AvroFuzzOptions): Promise<AvroFuzzResult> {
  const started = Date.now();
  const random = seededRandom(options.seed);
  const registry = await startRegistryProcess(options.folder);
  const violations: string[] = [];
  const violation = (text: string): void => {
    if (violations.length < 200) violations.push(text);
  };
  const tally = newPayloadTally();
  const quarantined: Record<string, number> = {};
  let validDecoded = 0;
  let stillValid = 0;
  let avscRefuses = 0;
  const rssBeforeBytes = residentBytes(process.pid);
  resetPeakResident(process.pid);
  try {
    const client = new RegistryClient({ url: registry.url });
    const writers: { id: number; type: avro.Type; reference: avro.Type }[] = [];
    for (const [index, schema] of FUZZ_SCHEMAS.entries()) {
      const { id } = await client.register(`avro-fuzz-${index}-value`, JSON.stringify(schema));
      writers.push({ id, type: avro.Type.forSchema(schema as avro.Schema, { registry: {} }), reference: avro.Type.forSchema(schema as avro.Schema, { registry: {} }) });
    }
    const unknownId = Math.max(...writers.map((writer) => writer.id)) + 1000;
    const deserializer = new AvroDeserializer(client);
    for (const writer of writers) await deserializer.prefetch(writer.id);
    const brokenShare = options.brokenShare ?? 0.7;
    let lastReport = Date.now();
    for (let index = 0; index < options.payloads; index += 1) {
      const { value, bytes, mutation } = drawPayload(random, writers, { brokenShare, unknownId, tally });
      let decoded: unknown;
      try {
        // As the loader's decode loop: the cached path, else the fetching one.
        try {
          decoded = deserializer.decodeSync(bytes);
        } catch (error) {
          if ((error as { code?: string }).code !== 'SERDE_SCHEMA_NOT_CACHED') throw error;
          decoded = await deserializer.decode(bytes);
        }
      } catch (error) {
        if (!isRecordFailure(error)) {
          violation(`${mutation ?? 'valid'} payload ${bytes.subarray(0, 48).toString('hex')}: not a record failure (the loader's task would fail): ${(error as Error).message}`);
        } else if (mutation === undefined) {
          violation(`a valid payload was refused: ${error.message}`);
        } else {
          quarantined[error.code] = (quarantined[error.code] ?? 0) + 1;
          if (error.message.length < 20) violation(`an imprecise error for ${mutation}: ${error.message}`);
        }
        continue;
      }
      if (mutation === undefined) {
        if (isDeepStrictEqual(normalize(decoded), normalize(value))) validDecoded += 1;
        else violation(`a valid payload decoded to another value: ${JSON.stringify(normalize(decoded)).slice(0, 200)}`);
        continue;
      }
      // A mutation that still decodes must read as reference avsc reads the same bytes.
      const id = schemaIdOf(bytes);
      const reference = writers.find((candidate) => candidate.id === id)?.reference;
      let expected: { value: unknown; offset: number } | undefined;
      try {
        expected = reference?.decode(bytes, FRAME_HEADER_BYTES);
      } catch {
        expected = undefined;
      }
      if (expected === undefined || expected.offset !== bytes.length) {
        // avsc refuses a 10-byte long varint whose value is beyond 2^53; Avro Java reads it as we
        // do (bits past 64 dropped): counted, not a violation.
        avscRefuses += 1;
        stillValid += 1;
      } else if (!isDeepStrictEqual(normalize(decoded), normalize(expected.value))) violation(`${mutation} payload decoded to a value avsc does not read from it`);
      else stillValid += 1;
      if (Date.now() - lastReport > 10_000) {
        lastReport = Date.now();
        options.say?.(`  ${index + 1} payloads, RSS ${(residentBytes(process.pid) / 2 ** 20).toFixed(0)} MiB, ${violations.length} violations`);
      }
    }
  } finally {
    const code = await registry.stop();
    if (code !== 0) violation(`the registry exited with ${code}`);
  }
  return {
    payloads: tally.valid + tally.broken,
    valid: tally.valid,
    validDecoded,
    broken: tally.broken,
    byMutation: tally.byMutation,
    quarantined,
    stillValid,
    avscRefuses,
    rssBeforeBytes,
    peakRssBytes: Math.max(peakResidentBytes(process.pid), rssBeforeBytes),
    seconds: Math.round((Date.now() - started) / 1000),
    violations,
  };
}

/** Plain data to compare: Buffers as hex, records as plain objects. */
export function normalize(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return `0x${value.toString('hex')}`;
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, normalize(inner)]));
  return value;
}

const mib = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(0)} MiB`;

export function formatAvroFuzzLine(result: AvroFuzzResult): string {
  const mutations = MUTATIONS.map((mutation) => `${mutation} ${result.byMutation[mutation]}`).join(', ');
  const codes = Object.entries(result.quarantined)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([code, count]) => `${code} ${count}`)
    .join(', ');
  return (
    `fuzz-avro: ${result.payloads} payloads: ${result.valid} valid (${result.validDecoded} decoded exactly), ${result.broken} broken (${mutations}); ` +
    `quarantined ${result.broken - result.stillValid} (${codes}), still valid Avro ${result.stillValid} (read as avsc reads them; ${result.avscRefuses} of them long varints only Avro Java reads); ` +
    `decoder RSS ${mib(result.rssBeforeBytes)} before, peak ${mib(result.peakRssBytes)} (+${mib(result.peakRssBytes - result.rssBeforeBytes)}); ${result.violations.length} violations in ${result.seconds} s`
  );
}
