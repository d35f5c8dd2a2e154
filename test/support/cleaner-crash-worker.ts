/**
 * A process that writes keyed records and tombstones to one compacted partition and cleans it
 * over and over, until it is killed (the cleaner crash test, test/chaos/compaction.ts):
 *
 *   node --import tsx test/support/cleaner-crash-worker.ts <data-dir> <seed>
 *
 * Before each append it prints `try <key> <value|-> ` and, once the append is flushed (acknowledged:
 * acks=all on a single replica), `ack <offset> <key> <value|->`. Values are unique per run and
 * append, so a record found in the log names its write. It cleans after every few appends, with a
 * small key map (partial passes) and small segments, so a kill often lands inside a pass or a swap.
 */
import { ManualClock } from '../../src/common/clock.js';
import { createLogger } from '../../src/common/logger.js';
import { encodeRecordBatch } from '../../src/protocol/records.js';
import { compressionName } from '../../src/protocol/compression.js';
import { LogManager } from '../../src/storage/log-manager.js';
import { logConfigSchema } from '../../src/storage/log-config.js';
import { CRASH_CLEANER, CRASH_KEYS, CRASH_LOG_CONFIG, CRASH_TOPIC } from './cleaner-crash-settings.js';
import { seededRandom } from './seeded-random.js';

async function main(): Promise<void> {
  const [dataDir, seedText] = process.argv.slice(2);
  if (dataDir === undefined || seedText === undefined) throw new Error('usage: cleaner-crash-worker <data-dir> <seed>');
  const random = seededRandom(Number(seedText));
  // Time moves with the writes, so tombstones pass their horizon (1 s) within a run.
  const clock = new ManualClock(Date.now());
  const manager = await LogManager.open({
    dataDir,
    logger: createLogger({ name: 'cleaner-crash-worker', level: 'warn' }),
    clock,
    configFor: () => logConfigSchema.parse(CRASH_LOG_CONFIG),
    cleaner: CRASH_CLEANER,
  });
  const log = await manager.getOrCreateLog(CRASH_TOPIC, 0);
  const say = (line: string): void => void process.stdout.write(`${line}\n`);
  say('ready');
  for (let append = 0; ; append += 1) {
    const count = 1 + Math.floor(random() * 4);
    const records = Array.from({ length: count }, (_, index) => ({
      key: `k${Math.floor(random() * CRASH_KEYS)}`,
      value: random() < 0.15 ? null : `s${seedText}-a${append}-${index}`,
    }));
    for (const record of records) say(`try ${record.key} ${record.value ?? '-'}`);
    const batch = encodeRecordBatch(
      records.map((record) => ({ key: Buffer.from(record.key), value: record.value === null ? null : Buffer.from(record.value), timestamp: clock.now() })),
      { compression: compressionName(Math.floor(random() * 5)) },
    );
    const appended = await log.append(batch, { waitForFlush: true });
    records.forEach((record, index) => say(`ack ${appended.baseOffset + index} ${record.key} ${record.value ?? '-'}`));
    clock.advance(50);
    if (append % 3 === 0) await manager.cleaner.cleanLogNow(log);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
