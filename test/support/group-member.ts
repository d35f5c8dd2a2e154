/**
 * A member of a ZooKeeper consumer group as its own OS process, for the group integration tests:
 *
 *   node --import tsx test/support/group-member.ts --zookeeper host:port/chroot --bootstrap host:port
 *     --group g --topic t [--streams 1] [--reset smallest|largest|none] [--session-timeout 4000] [--commit-interval 500]
 *
 * Prints one JSON line per consumed message to stdout, `{"partition","offset","value"}` (offset
 * as a string), written synchronously so a SIGKILL loses no printed line. Logs go to stderr.
 * SIGTERM closes the consumer cleanly (commit, release, deregister) and exits 0; a consumer that
 * fails (a rebalance that never succeeds, an offset outside the log with --reset none) logs the
 * error and exits 3.
 */
import { writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createLogger } from '../../src/common/logger.js';
import { ZooKeeperConsumer } from '../../src/client/group/zookeeper-consumer.js';

const { values } = parseArgs({
  options: {
    zookeeper: { type: 'string' },
    bootstrap: { type: 'string' },
    group: { type: 'string' },
    topic: { type: 'string' },
    streams: { type: 'string', default: '1' },
    reset: { type: 'string', default: 'smallest' },
    'session-timeout': { type: 'string', default: '4000' },
    'commit-interval': { type: 'string', default: '500' },
    'rebalance-backoff': { type: 'string', default: '1000' },
    'rebalance-retries': { type: 'string', default: '20' },
  },
});

function required(name: string, value: string | undefined): string {
  if (value === undefined) {
    process.stderr.write(`group-member: --${name} is required\n`);
    process.exit(2);
  }
  return value;
}

/**
 * Writes the whole line before going on. stdout may be a non-blocking pipe (a parent reading it
 * line by line): when the pipe is full, writeSync throws EAGAIN, or writes part of the line, and
 * the member must wait for the reader, not die (a resumed member prints a burst).
 */
function writeLine(text: string): void {
  let bytes = Buffer.from(text, 'utf8');
  while (bytes.length > 0) {
    try {
      bytes = bytes.subarray(writeSync(1, bytes));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}

const topic = required('topic', values.topic);
const logger = createLogger({ name: 'group-member', level: 'info' });
const consumer = await ZooKeeperConsumer.connect({
  zookeeper: required('zookeeper', values.zookeeper),
  bootstrap: required('bootstrap', values.bootstrap).split(','),
  group: required('group', values.group),
  autoOffsetReset: values.reset === 'largest' || values.reset === 'none' ? values.reset : 'smallest',
  autoCommitIntervalMs: Number(values['commit-interval']),
  sessionTimeoutMs: Number(values['session-timeout']),
  rebalanceBackoffMs: Number(values['rebalance-backoff']),
  rebalanceMaxRetries: Number(values['rebalance-retries']),
  logger,
  onError: (error) => {
    logger.fatal({ err: error }, 'consumer failed');
    process.exit(3);
  },
});

let stopping = false;
process.once('SIGTERM', () => {
  stopping = true;
  consumer.close().then(
    () => process.exit(0),
    (error: unknown) => {
      logger.error({ err: error }, 'close failed');
      process.exit(1);
    },
  );
});

const streams = (await consumer.createMessageStreams({ [topic]: Number(values.streams) }))[topic] ?? [];
logger.info({ consumerId: consumer.consumerId, streams: streams.length }, 'member started');
await Promise.all(
  streams.map(async (stream) => {
    for await (const message of stream) {
      const line = JSON.stringify({ partition: message.partition, offset: message.offset.toString(), value: message.value?.toString('utf8') ?? null });
      writeLine(`${line}\n`);
    }
  }),
);
if (!stopping) logger.warn('streams ended');
