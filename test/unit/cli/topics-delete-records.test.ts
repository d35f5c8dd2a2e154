/**
 * `tributary topics delete-records`, run as a user runs it (the bin script in a child process)
 * against an in-process standalone broker: one partition, every partition, kafka-delete-records'
 * JSON file, and the refusals (past the high watermark, an unknown partition, bad arguments).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Producer } from '../../../src/client/producer.js';
import { createLogger } from '../../../src/common/logger.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { runTributary, type CommandResult } from '../../support/cli.js';

let broker: InProcessBroker;
const topic = 'cli-trim';

beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '3', 'log.flush.interval.messages': '1' });
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], logger: createLogger({ name: 'test', level: 'silent' }) });
  for (let partition = 0; partition < 3; partition += 1) {
    for (let i = 0; i < 10; i += 1) await producer.send(topic, [{ partition, key: null, value: Buffer.from(`${partition}-${i}`) }]);
  }
  await producer.close();
});
afterAll(async () => {
  await broker?.stop();
});

function deleteRecords(...args: string[]): Promise<CommandResult> {
  return runTributary(['topics', 'delete-records', '--bootstrap-server', broker.bootstrap, ...args]);
}

function starts(): number[] {
  return [0, 1, 2].map((partition) => broker.broker.logManager.getLog(topic, partition)?.logStartOffset ?? -1);
}

// Each command starts through tsx: seconds on a loaded 2-core machine.
describe('tributary topics delete-records', { timeout: 120_000 }, () => {
  it('deletes below an offset in one partition, then everything below the high watermark in every partition', async () => {
    const one = await deleteRecords('--topic', topic, '--partition', '1', '--offset', '4');
    expect(one.status, one.output).toBe(0);
    expect(one.stdout).toBe(`${topic} partition 1: records below 4 deleted (log start 4)\n`);
    expect(starts()).toEqual([0, 4, 0]);

    const all = await deleteRecords('--topic', topic, '--offset', '-1');
    expect(all.status, all.output).toBe(0);
    expect(all.stdout.trim().split('\n').sort()).toEqual([0, 1, 2].map((partition) => `${topic} partition ${partition}: records below 10 deleted (log start 10)`));
    expect(starts()).toEqual([10, 10, 10]);
  });

  it("takes kafka-delete-records' --offset-json-file", async () => {
    const producer = await Producer.connect({ bootstrap: [broker.bootstrap], logger: createLogger({ name: 'test', level: 'silent' }) });
    for (let i = 0; i < 5; i += 1) await producer.send(topic, [{ partition: 2, key: null, value: Buffer.from(`more-${i}`) }]);
    await producer.close();
    const file = join(broker.dataDir, 'offsets.json');
    writeFileSync(file, JSON.stringify({ partitions: [{ topic, partition: 2, offset: 12 }], version: 1 }));
    const result = await deleteRecords('--offset-json-file', file);
    expect(result.status, result.output).toBe(0);
    expect(result.stdout).toBe(`${topic} partition 2: records below 12 deleted (log start 12)\n`);
    expect(starts()).toEqual([10, 10, 12]);
  });

  it('fails, naming the partition and why, past the high watermark or for a partition that does not exist; moves nothing', async () => {
    const past = await deleteRecords('--topic', topic, '--partition', '0', '--offset', '11');
    expect(past.status).not.toBe(0);
    expect(past.stderr).toContain(`could not delete records of ${topic}-0: OFFSET_OUT_OF_RANGE`);
    const missing = await deleteRecords('--topic', topic, '--partition', '9', '--offset', '1');
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('partition 9 does not exist');
    const unclear = await deleteRecords('--topic', topic, '--offset', 'soon');
    expect(unclear.status).not.toBe(0);
    expect(unclear.stderr).toContain('--offset takes an offset');
    expect(starts()).toEqual([10, 10, 12]);
  });
});
