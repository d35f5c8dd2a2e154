/**
 * Iceberg rows vs Parquet rows, in one process (`npx tsx test/bench/iceberg-rows.ts`, issue #33):
 * a benchmark of what an Iceberg load does per record beyond a Parquet load, without the broker,
 * the warehouse or the commit — a benchmark, not a test: it asserts nothing about speed.
 *
 * The records are the wide schema of `npm run bench:etl` (etl-records.ts), framed by avsc as the
 * registry's serializer writes them. Each round decodes them again (the reader type with exact longs,
 * as the loader's deserializer decodes them) and writes them file by file, as a task writes one
 * partition's hour files:
 *
 *   decode   decode only: the floor both share
 *   parquet  openDataFileWriter(parquet, the codec) of the record type: append each, finish
 *   iceberg  the same of tableRowType(record type), each record appended as tableRow(record, its
 *            topic/partition/offset/timestamps), then the file's statistics as icebergMetrics
 *
 * Row groups close at --row-group-bytes of Avro-encoded rows (default 2 MiB, the loader's at its
 * default 16 MiB memory budget). Rounds alternate the variants; it prints µs per record of the
 * process's CPU time (steadier than wall time when other work shares the cores) and of wall time
 * (median, min–max over the rounds), the bytes written with their sha256 (the same digest before
 * and after a change: the files did not change), and iceberg ÷ parquet as a throughput ratio,
 * round by round (median and spread), with and without the decode both share.
 *
 * Options: --records N (records per round, default 200,000), --per-file N (records per file,
 * default 2,600: `bench:etl`'s 500,000 records over 8 partitions and 24 hours), --rounds N
 * (default 7), --codec zstd|snappy|gzip|null, --row-group-bytes N, --only parquet|iceberg|decode
 * (one variant, for a CPU profile: `node --cpu-prof --import tsx test/bench/iceberg-rows.ts --only iceberg`).
 */
import { createHash, type Hash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import avro from 'avsc';
import type { Type } from 'avsc';
import { openDataFileWriter, parseDataFileSchema, type DataFileCodec } from '../../src/etl/files/data-files.js';
import { icebergMetrics } from '../../src/etl/iceberg/file-metrics.js';
import { tableRow, tableRowType } from '../../src/etl/iceberg/table-row.js';
import { hourOf } from '../../src/etl/layout.js';
import { withExactLongs } from '../../src/registry/serde/exact-long.js';
import { seededRandom } from '../support/seeded-random.js';
import { fmt, fmtInt, say } from './bench-output.js';
import { WIDE_EVENT, wideEvents } from './etl-records.js';

type Variant = 'decode' | 'parquet' | 'iceberg';
const VARIANTS: readonly Variant[] = ['decode', 'parquet', 'iceberg'];
const TOPIC = 'bench-wide-events';

const { values } = parseArgs({
  options: {
    records: { type: 'string' },
    'per-file': { type: 'string' },
    rounds: { type: 'string' },
    codec: { type: 'string' },
    'row-group-bytes': { type: 'string' },
    only: { type: 'string' },
  },
  strict: true,
});
const records = Number(values.records ?? 200_000);
const perFile = Number(values['per-file'] ?? 2_600);
const rounds = Number(values.rounds ?? 7);
const codec = (values.codec ?? 'zstd') as DataFileCodec;
const rowGroupBytes = Number(values['row-group-bytes'] ?? 2 * 1024 * 1024);
const only = values.only as Variant | undefined;
if (only !== undefined && !VARIANTS.includes(only)) throw new Error(`--only: one of ${VARIANTS.join(', ')}`);

const writerType = avro.Type.forSchema(JSON.parse(WIDE_EVENT) as avro.Schema);
// Decoded as the loader's deserializer decodes (registry/serde/deserializer.ts); written as the file type.
const readerType: Type = withExactLongs(avro.Type.forSchema(JSON.parse(WIDE_EVENT) as avro.Schema));
const resolver = readerType.createResolver(withExactLongs(writerType), { ignoreNamespaces: true });
const fileType: Type = parseDataFileSchema(WIDE_EVENT);
const rowType = tableRowType(fileType);
const random = seededRandom(0x7f1b_0010);
const framed = wideEvents(0, records, records, 24, random).map((event) => ({ bytes: writerType.toBuffer(event), timestamp: event.eventTime }));

interface Figures {
  readonly ms: number;
  /** CPU time of the process (user + system), ms: steadier than wall time on a busy machine. */
  readonly cpuMs: number;
  readonly bytes: number;
  /** sha256 of every file's bytes and metrics, in order: whether a change kept the files as they were. */
  readonly digest: string;
}

async function runVariant(variant: Variant): Promise<Figures> {
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  let bytes = 0;
  const hash: Hash = createHash('sha256');
  for (let first = 0; first < framed.length; first += perFile) {
    const end = Math.min(framed.length, first + perFile);
    if (variant === 'decode') {
      for (let offset = first; offset < end; offset += 1) {
        const value = readerType.fromBuffer(framed[offset]!.bytes, resolver) as { eventTime: number };
        bytes += hourOf(value.eventTime) > 0 ? 0 : 1; // keeps the decode from being optimized away
      }
      continue;
    }
    const iceberg = variant === 'iceberg';
    const writer = openDataFileWriter({ format: 'parquet', codec, schema: iceberg ? rowType : fileType, identity: `${TOPIC}+0+${first}+${end}`, rowGroupBytes }, (chunk) => {
      bytes += chunk.length;
      hash.update(chunk);
    });
    for (let offset = first; offset < end; offset += 1) {
      const { bytes: message, timestamp } = framed[offset]!;
      const value = readerType.fromBuffer(message, resolver) as { eventTime: number };
      const appended = iceberg ? writer.append(tableRow(value, { topic: TOPIC, partition: 0, offset, timestamp, eventTimeMs: value.eventTime })) : writer.append(value);
      if (appended !== undefined) await appended;
    }
    await writer.finish({ 'tributary.range': `${first}-${end}` });
    if (iceberg) hash.update(JSON.stringify(icebergMetrics(writer.statistics()!)));
  }
  const cpu = process.cpuUsage(cpuStart);
  return { ms: performance.now() - start, cpuMs: (cpu.user + cpu.system) / 1000, bytes, digest: hash.digest('hex').slice(0, 16) };
}

const median = (list: readonly number[]): number => {
  const sorted = [...list].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const spread = (list: readonly number[], digits: number): string => `${fmt(median(list), digits)} (${fmt(Math.min(...list), digits)}–${fmt(Math.max(...list), digits)})`;

const variants = only === undefined ? VARIANTS : [only];
say(`iceberg rows vs parquet rows: ${fmtInt(records)} wide records, ${fmtInt(perFile)} per file, ${codec}, row groups of ${fmtInt(rowGroupBytes)} Avro bytes, ${rounds} rounds (+1 warm-up), node ${process.version}`);
for (const variant of variants) await runVariant(variant); // warm-up
const runs = new Map<Variant, Figures[]>(variants.map((variant) => [variant, []]));
for (let round = 0; round < rounds; round += 1) {
  for (const variant of variants) runs.get(variant)!.push(await runVariant(variant));
}
for (const variant of variants) {
  const figures = runs.get(variant)!;
  const last = figures[figures.length - 1]!;
  say(
    `  ${variant.padEnd(8)} CPU µs/record ${spread(figures.map((f) => (1000 * f.cpuMs) / records), 2)}, wall µs/record ${spread(figures.map((f) => (1000 * f.ms) / records), 2)}` +
      `${variant === 'decode' ? '' : `; ${fmt(last.bytes / 1e6, 2)} MB written (sha256 ${last.digest}…)`}`,
  );
}
const parquet = runs.get('parquet');
const iceberg = runs.get('iceberg');
if (parquet !== undefined && iceberg !== undefined) {
  const ratio = (of: (f: Figures) => number): string => spread(parquet.map((f, round) => of(f) / of(iceberg[round]!)), 3);
  say(`  iceberg ÷ parquet, records per CPU second (round by round): ${ratio((f) => f.cpuMs)}×; per wall second: ${ratio((f) => f.ms)}×`);
  const decode = runs.get('decode');
  if (decode !== undefined) {
    const beyond = parquet.map((f, round) => (iceberg[round]!.cpuMs - decode[round]!.cpuMs) / (f.cpuMs - decode[round]!.cpuMs));
    say(`  iceberg's CPU beyond the decode ÷ parquet's: ${spread(beyond, 3)}×`);
  }
}
