/**
 * A kafkajs 2.2.4 group member as its own OS process, for the consumer-group compatibility tests:
 *
 *   node --import tsx test/support/kafkajs-group-member.ts --bootstrap host:port --group g
 *     --topic t [--client-id c] [--session-timeout 6000] [--heartbeat-interval 500] [--max-wait 200]
 *     [--delay-ms 0]
 *
 * `consumer.run` with kafkajs' defaults for committing (autoCommit: the offsets of each batch are
 * committed after it is processed, and on a rebalance), from the beginning when the group has no
 * offsets. It prints JSON lines to stdout, written synchronously so a SIGKILL loses no printed line:
 *
 *   {"event":"assignment","generation":G,"memberId":"…","partitions":[…]}   after each SyncGroup
 *   {"event":"record","generation":G,"memberId":"…","partition":P,"offset":"O","value":"…"}
 *
 * A record line is printed before kafkajs may commit its offset (the commit follows the batch), so
 * a record whose offset was committed has always been printed. --delay-ms makes each record take
 * that long after it is printed (a slow consumer: a kill then tends to land inside a batch). The generation comes from kafkajs'
 * own debug log line "Received assignment" (its events carry no generation). kafkajs' warnings and
 * errors go to stderr. SIGTERM disconnects cleanly (commit, LeaveGroup) and exits 0; a consumer
 * crash exits 3.
 */
import { writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Kafka, logLevel, type LogEntry } from 'kafkajs';

const { values } = parseArgs({
  options: {
    bootstrap: { type: 'string' },
    group: { type: 'string' },
    topic: { type: 'string' },
    'client-id': { type: 'string', default: 'kafkajs-member' },
    'session-timeout': { type: 'string', default: '6000' },
    'heartbeat-interval': { type: 'string', default: '500' },
    'max-wait': { type: 'string', default: '200' },
    'delay-ms': { type: 'string', default: '0' },
  },
});

function required(name: string, value: string | undefined): string {
  if (value === undefined) {
    process.stderr.write(`kafkajs-group-member: --${name} is required\n`);
    process.exit(2);
  }
  return value;
}

const print = (line: Record<string, unknown>): void => void writeSync(1, `${JSON.stringify(line)}\n`);

let generation = -1;
let memberId = '';

function logEntry(entry: LogEntry): void {
  const { message, ...fields } = entry.log;
  if (message === 'Received assignment') {
    generation = Number(fields['generationId']);
    memberId = String(fields['memberId']);
    const assigned = (fields['memberAssignment'] ?? {}) as Record<string, number[]>;
    print({ event: 'assignment', generation, memberId, partitions: [...(assigned[topic] ?? [])].sort((a, b) => a - b) });
  }
  if (entry.level <= logLevel.WARN) process.stderr.write(`${entry.label} [${entry.namespace}] ${message} ${JSON.stringify(fields)}\n`);
}

const topic = required('topic', values.topic);
const delayMs = Number(values['delay-ms']);
const kafka = new Kafka({
  clientId: values['client-id'],
  brokers: required('bootstrap', values.bootstrap).split(','),
  logLevel: logLevel.DEBUG,
  logCreator: () => logEntry,
});
const consumer = kafka.consumer({
  groupId: required('group', values.group),
  sessionTimeout: Number(values['session-timeout']),
  heartbeatInterval: Number(values['heartbeat-interval']),
  maxWaitTimeInMs: Number(values['max-wait']),
});
consumer.on(consumer.events.CRASH, (event) => {
  process.stderr.write(`consumer crashed: ${String(event.payload.error)}\n`);
  process.exit(3);
});

process.once('SIGTERM', () => {
  consumer.disconnect().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`disconnect failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
});

await consumer.connect();
await consumer.subscribe({ topics: [topic], fromBeginning: true });
await consumer.run({
  eachMessage: async ({ partition, message }) => {
    print({ event: 'record', generation, memberId, partition, offset: message.offset, value: message.value?.toString('utf8') ?? null });
    if (delayMs > 0) await sleep(delayMs);
  },
});
