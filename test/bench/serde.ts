/**
 * Serde benchmark (`npm run bench:serde`): a benchmark, not a test — it asserts nothing and exits
 * 0 unless something throws.
 *
 * What it compares: decoding schema-registry framed Avro records through AvroDeserializer with
 * its cache warm, against avsc decoding the same Avro bytes directly (type.fromBuffer on the
 * datum without the 5-byte header, which the caller would otherwise have to strip). Both decode
 * the same RECORDS distinct PageViewEvent records (schemas/PageViewEvent.avsc) in the same order.
 *
 *   plain    no reader schema: writer type decode vs avsc writerType.fromBuffer(datum)
 *   resolved a v2 reader schema (one added field with a default): deserializer with the reader
 *            vs avsc readerType.fromBuffer(datum, resolver)
 *
 * For each, the deserializer is measured through decodeSync (no promise) and through
 * `await decode` (a promise per record). Ratio = serde records/s ÷ avsc records/s; the target is
 * ≥ 0.9 for the warm path. The registry runs in this process (startRegistryServer on a temp data
 * dir); after warm-up no request reaches it, which the run checks and prints.
 *
 * The machine is shared, so measurements are short and many: each round measures a baseline and
 * its serde contenders back to back (order alternating), the ratio is taken within the round, and
 * the table shows the medians of rates and of ratios.
 *
 * Options (environment):
 *   BENCH_RECORDS=20000   distinct records
 *   BENCH_PASSES=2        passes over the records per measurement
 *   BENCH_ROUNDS=41       rounds of every contender
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import avro from 'avsc';
import { createLogger } from '../../src/common/logger.js';
import { RegistryClient } from '../../src/registry/client.js';
import { parseAvroSchema } from '../../src/registry/avro-schema.js';
import { AvroDeserializer } from '../../src/registry/serde/deserializer.js';
import { FRAME_HEADER_BYTES } from '../../src/registry/serde/framing.js';
import { AvroSerializer } from '../../src/registry/serde/serializer.js';
import { startRegistryServer } from '../../src/registry/server.js';
import { envInt, fmtInt, say } from './bench-output.js';

const RECORDS = envInt('BENCH_RECORDS', 20_000);
const PASSES = envInt('BENCH_PASSES', 2);
const ROUNDS = envInt('BENCH_ROUNDS', 41);
const SUBJECT = 'PageViewEvent-value';
const PAGE_VIEW = readFileSync(join(import.meta.dirname, '..', '..', 'schemas', 'PageViewEvent.avsc'), 'utf8');

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}

/** A reader schema one version ahead: a new field with a default, so a resolver is needed. */
function readerV2(): string {
  const json = JSON.parse(PAGE_VIEW) as { fields: unknown[] };
  json.fields.push({ name: 'sessionId', type: ['null', 'string'], default: null, doc: 'added in v2' });
  return JSON.stringify(json);
}

function pageView(i: number): Record<string, unknown> {
  return {
    header: { eventId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, time: 1_700_000_000_000 + i * 37, server: `web-${i % 64}.example`, service: 'frontend' },
    memberId: i % 5 === 0 ? null : 1_000_000 + i,
    pageKey: ['profile', 'feed', 'job-view', 'search', 'messaging'][i % 5],
    url: `/in/member-${i}?trk=${(i * 7919) % 10_000}`,
    referrer: i % 3 === 0 ? null : `https://www.example.com/feed/${i % 97}`,
    userAgent: i % 4 === 0 ? null : 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
  };
}

interface Contender {
  readonly label: string;
  /** Decodes every record PASSES times; answers a checksum so the work cannot be skipped. */
  readonly run: () => Promise<number> | number;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tributary-bench-serde-'));
  const registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir, logger: createLogger({ name: 'registry', level: 'silent' }) });
  let requests = 0;
  const client = new RegistryClient({
    url: registry.url,
    fetch: (input, init) => {
      requests += 1;
      return fetch(input, init);
    },
  });
  try {
    const serializer = new AvroSerializer(client);
    const messages: Buffer[] = [];
    for (let i = 0; i < RECORDS; i++) messages.push(await serializer.encode(SUBJECT, pageView(i), PAGE_VIEW));
    // The datum alone, as a caller decoding with avsc directly would hold it (its own buffer).
    const datums = messages.map((message) => Buffer.from(message.subarray(FRAME_HEADER_BYTES)));
    const bytes = messages.reduce((sum, message) => sum + message.length, 0);

    const writerType = avro.Type.forSchema(JSON.parse(PAGE_VIEW) as avro.Schema);
    const reader = parseAvroSchema(readerV2());
    const readerType = avro.Type.forSchema(JSON.parse(readerV2()) as avro.Schema);
    const resolver = readerType.createResolver(writerType, { ignoreNamespaces: true });

    const deserializer = new AvroDeserializer(client);
    await deserializer.decode(messages[0]!);
    await deserializer.decode(messages[0]!, reader);
    const requestsAfterWarmUp = requests;

    const checksum = (value: { url: string }): number => value.url.length;
    const contenders: Contender[] = [
      {
        label: 'avsc fromBuffer (plain)',
        run: () => {
          let sum = 0;
          for (let pass = 0; pass < PASSES; pass++) for (const datum of datums) sum += checksum(writerType.fromBuffer(datum) as { url: string });
          return sum;
        },
      },
      {
        label: 'serde decodeSync (plain)',
        run: () => {
          let sum = 0;
          for (let pass = 0; pass < PASSES; pass++) for (const message of messages) sum += checksum(deserializer.decodeSync<{ url: string }>(message));
          return sum;
        },
      },
      {
        label: 'serde await decode (plain)',
        run: async () => {
          let sum = 0;
          for (let pass = 0; pass < PASSES; pass++) for (const message of messages) sum += checksum(await deserializer.decode<{ url: string }>(message));
          return sum;
        },
      },
      {
        label: 'avsc fromBuffer (resolved)',
        run: () => {
          let sum = 0;
          for (let pass = 0; pass < PASSES; pass++) for (const datum of datums) sum += checksum(readerType.fromBuffer(datum, resolver) as { url: string });
          return sum;
        },
      },
      {
        label: 'serde decodeSync (resolved)',
        run: () => {
          let sum = 0;
          for (let pass = 0; pass < PASSES; pass++) for (const message of messages) sum += checksum(deserializer.decodeSync<{ url: string }>(message, reader));
          return sum;
        },
      },
      {
        label: 'serde await decode (resolved)',
        run: async () => {
          let sum = 0;
          for (let pass = 0; pass < PASSES; pass++) for (const message of messages) sum += checksum(await deserializer.decode<{ url: string }>(message, reader));
          return sum;
        },
      },
    ];

    say(`serde benchmark: ${fmtInt(RECORDS)} distinct PageViewEvent records, ${Math.round(bytes / RECORDS)} bytes framed on average; ` +
      `${PASSES} passes per measurement, ${ROUNDS} rounds; node ${process.version} on ${hostname()}`);
    // One untimed round lets V8 optimise every contender before anything is measured.
    const sums = new Map<string, number>();
    for (const contender of contenders) sums.set(contender.label, await contender.run());
    const rates = new Map<string, number[]>(contenders.map((c) => [c.label, []]));
    /** Per round, each serde contender's rate ÷ its avsc baseline's rate in the same round. */
    const ratios = new Map<string, number[]>(contenders.map((c) => [c.label, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of ['plain', 'resolved']) {
        const group = contenders.filter((c) => c.label.endsWith(`(${mode})`));
        const measured = new Map<string, number>();
        for (const contender of round % 2 === 0 ? group : [...group].reverse()) {
          const start = performance.now();
          const sum = await contender.run();
          const seconds = (performance.now() - start) / 1000;
          if (sum !== sums.get(contender.label)) throw new Error(`${contender.label} decoded different values in round ${round}`);
          measured.set(contender.label, (RECORDS * PASSES) / seconds);
          rates.get(contender.label)!.push((RECORDS * PASSES) / seconds);
        }
        const baseline = measured.get(`avsc fromBuffer (${mode})`)!;
        for (const [label, value] of measured) ratios.get(label)!.push(value / baseline);
      }
    }
    const rate = (label: string): number => median(rates.get(label)!);
    const ratio = (label: string): number => median(ratios.get(label)!);
    say('');
    say(`${'contender'.padEnd(32)}${'records/s (median)'.padStart(20)}${'ratio to avsc (median of rounds)'.padStart(34)}`);
    for (const mode of ['plain', 'resolved']) {
      for (const label of [`avsc fromBuffer (${mode})`, `serde decodeSync (${mode})`, `serde await decode (${mode})`]) {
        say(`${label.padEnd(32)}${fmtInt(rate(label)).padStart(20)}${ratio(label).toFixed(3).padStart(34)}`);
      }
    }
    say('');
    say(`registry requests: ${requestsAfterWarmUp} during set-up and warm-up, ${requests - requestsAfterWarmUp} while measuring (target 0)`);
  } finally {
    await registry.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
