/**
 * kcat, kafkajs and the Java client produce and consume through a failover (replication issue
 * acceptance; replication.md §6 test 12, briefly): one ZooKeeper (the compat global setup's), three
 * broker processes (test/support/replicated-cluster.ts) with min.insync.replicas=2, and per client
 * a topic of 3 partitions with RF=3.
 *
 * For each client, a group consumer runs from before the first record to after the last, and a
 * producer is fed unique numbers (150, then 200, then 150) while the leader of partition 0 is
 * SIGKILLed in the middle of the second batch; once another ISR member leads (higher epoch) the
 * killed broker restarts on its data dir, and the third batch goes out. The group is named so
 * that the killed broker is its coordinator too: the consumer rides out a leader change and the
 * group moving away (on the death) and back (on the restart; placement is by hashing over the
 * live brokers). Membership is not carried over by a move, so the consumer rejoins each time and
 * re-reads from its last commit.
 *
 * Clients at their DEFAULT settings, but for what a test must name (bootstrap, topic, group, and
 * "from the beginning"):
 *
 * - librdkafka 2.0.2 (Debian's kcat): `kcat -P` (acks=all, idempotence off, retries unbounded
 *   within message.timeout.ms = 300 s; each record keyed by its value, so the records spread over
 *   the partitions) and `kcat -G` (auto.offset.reset=earliest);
 * - kafkajs 2.2.4: an idempotent producer (`idempotent: true`, which makes acks −1 and retries
 *   unbounded), one send of ≤ 10 values at a time, and `consumer.run` with `fromBeginning`;
 * - Apache Kafka's Java client 3.9.1 and 4.1.1 (replication-clients/LineClient.java): KafkaProducer
 *   with no settings (idempotent, acks=all since 3.0; each record keyed by its value, so the
 *   records spread over the partitions) and a KafkaConsumer in a group (auto.offset.reset=earliest,
 *   as --from-beginning); besides, a KafkaConsumer without a group that assign()s every partition
 *   and reads from the beginning (the one that fetches through the leader change, see below).
 *
 * What is asserted, per client:
 * - P1 the producer ends with an outcome for every value and no failure (every default here
 *   retries far longer than a failover takes), so every value was acknowledged;
 * - P2 every acknowledged value is in the log after healing (read with our own client from log
 *   start to high watermark), and nothing else is; the partitions the killed broker led hold
 *   values sent after the kill (the producer did write through the failover);
 * - P3 where the producer is idempotent (kafkajs, Java), every value is in the log exactly once.
 *   kcat's producer is not idempotent: a value stored twice after a retry is allowed, and counted;
 * - C1 the consumer received every acknowledged value;
 * - C2 every record it received is in the final log at the offset it was received at (nothing
 *   that later disappeared, no offset with two values);
 * - C3 per partition it never skipped an offset: each record it received is the next one after
 *   the previous, or a re-delivery from an earlier offset (a rewind). Its first is offset 0;
 * - C4 at-least-once bound: a partition rewinds only when the group hands it to the consumer
 *   again (a rebalance after the coordinator moved, say), so rewinds ≤ assignments of that
 *   partition − 1. Any record received twice is either such a re-delivery or a second copy in the
 *   log of a value kcat's producer stored twice;
 * - C5 the group's committed offsets reach the end of every partition while the consumer runs,
 *   and are still there after it has closed;
 * - Java only: the consumer never reported "Truncation detected" nor skipped a validation for want
 *   of OffsetForLeaderEpoch v3 ("does not support the required protocol version"); the producer
 *   logged no ERROR, the consumer none but the failed auto-commits of a member the moved
 *   coordinator does not know (COORDINATOR_MOVE_ERRORS), which it logs before rejoining. And the
 *   assigned consumer validated its position with OffsetForLeaderEpoch after the leader change
 *   (KIP-320 truncation detection; its DEBUG line "Handling OffsetsForLeaderEpoch response for
 *   <topic>-<p>" for a partition whose leader died): the Java client keeps leader epochs only from
 *   Metadata v9 (flexible) up, which the brokers advertise (checked first). The group consumer
 *   validates only when its positions outlive the rebalance the coordinator move causes (see
 *   expectPositionValidation), so it is not required to; A1 the assigned consumer read every
 *   partition exactly as the log holds it, in order, once;
 * - afterwards every partition's ISR is back to [1,2,3] and its replicas hold identical batches
 *   below the high watermark (I6), and no broker logged an error (level ≥ 50) meanwhile.
 *
 * No timing assertion: only generous timeouts. Failures name what each side saw.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ConfigResourceTypes, Kafka, logLevel, Partitioners, type Admin, type LogEntry } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KafkaConnection } from '../../src/client/connection.js';
import { coordinatorFor } from '../../src/broker/group/coordinator-placement.js';
import { ApiVersionsApi } from '../../src/protocol/apis/api-versions.js';
import { FindCoordinatorApi } from '../../src/protocol/apis/find-coordinator.js';
import { MetadataApi } from '../../src/protocol/apis/metadata.js';
import { javaCommand, javaEnvironment } from '../services/java.js';
import { LOOPBACK } from '../services/network.js';
import { openRun } from '../services/run-dir.js';
import { ensureJars, KAFKA_4_VERSION, KAFKA_CLIENTS_4_JARS, KAFKA_VERSION } from '../services/service-jars.js';
import { KAFKA_TOOLS_LOG4J } from '../support/java.js';
import { startLineProcess, type LineProcess } from '../support/line-process.js';
import { formatReplicaComparison } from '../support/replica-files.js';
import { describeState, ReplicatedCluster } from '../support/replicated-cluster.js';
import type { FinalPartition } from '../support/replication-history.js';

const { runDir, kafkaToolsDir, zookeeper } = inject('compat');
const run = openRun(runDir);
const LINE_CLIENT = join(dirname(fileURLToPath(import.meta.url)), 'replication-clients', 'LineClient.java');

const PARTITIONS = 3;
const BROKERS = [1, 2, 3];
/** Values fed before the kill, around it (the kill comes after the first half), and after the restart. */
const PHASE_A = 150;
const PHASE_B = 200;
const PHASE_C = 150;
/** Feeding pace: 10 values every 100 ms. */
const CHUNK = 10;
const CHUNK_INTERVAL_MS = 100;

let cluster: ReplicatedCluster;
let admin: Admin;
let kafkaClients4Dir: string;
/** The highest Metadata version the brokers advertise (ApiVersions): the Java consumer's epoch validation needs 9. */
let metadataMaxVersion = -1;
const processes: LineProcess[] = [];

beforeAll(async () => {
  kafkaClients4Dir = await ensureJars(KAFKA_CLIENTS_4_JARS);
  cluster = await ReplicatedCluster.start({
    run,
    zookeeper,
    name: 'clients',
    // A group's first join is not held back 3 s for more members.
    settings: { 'shutdown.grace.ms': '1000', 'group.initial.rebalance.delay.ms': '0' },
  });
  admin = new Kafka({ clientId: 'replication-clients-admin', brokers: cluster.bootstrap(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  // The topics get min.insync.replicas from the brokers (a topic override is refused, see failoverScenario).
  const described = await admin.describeConfigs({ resources: BROKERS.map((id) => ({ type: ConfigResourceTypes.BROKER, name: String(id), configNames: ['min.insync.replicas'] })), includeSynonyms: false });
  expect(described.resources.map((resource) => [resource.resourceName, resource.configEntries.find((entry) => entry.configName === 'min.insync.replicas')?.configValue])).toEqual(BROKERS.map((id) => [String(id), '2']));
  const connection = await KafkaConnection.open(LOOPBACK, cluster.broker(1).port, { clientId: 'replication-clients-admin' });
  try {
    const versions = await connection.request(ApiVersionsApi, 2, {});
    metadataMaxVersion = versions.apiKeys.find((entry) => entry.apiKey === MetadataApi.apiKey)?.maxVersion ?? -1;
  } finally {
    connection.close();
  }
  // The Java consumer's position validation needs leader epochs it trusts: Metadata v9+.
  expect(metadataMaxVersion, 'the Metadata versions the brokers advertise reach v9').toBeGreaterThanOrEqual(9);
}, 180_000);

afterAll(async () => {
  await Promise.allSettled(processes.map((child) => child.kill()));
  await admin?.disconnect();
  await cluster?.close();
});

// -------------------------------------------------------------------------------------------------
// What every client driver offers the scenario

interface ProduceOutcome {
  /** Values the client reported stored. */
  readonly acknowledged: number[];
  /** One line per value the client reported failed (or that it left without an outcome). */
  readonly failures: string[];
  /** Facts for the report line. */
  readonly summary: string;
}

interface ProducerDriver {
  /** Hands values to the client, which sends them at its own pace. */
  offer(values: readonly number[]): void;
  /** End of input: resolves once the client has an outcome for every value offered. */
  finish(): Promise<ProduceOutcome>;
}

interface Delivery {
  readonly partition: number;
  readonly offset: number;
  readonly value: number;
}

interface ConsumerDriver {
  /** Every record received, in the order received. */
  deliveries(): Delivery[];
  /** The partitions of each assignment the group gave the consumer, in order. */
  assignments(): number[][];
  /** A clean stop: the client closes its consumer, which commits. */
  stop(): Promise<void>;
  /** Facts for the report line and failure messages. */
  describe(): string;
}

interface ClientDriver {
  readonly name: string;
  readonly idempotent: boolean;
  startConsumer(topic: string, group: string): Promise<ConsumerDriver>;
  startProducer(topic: string): Promise<ProducerDriver>;
  /**
   * A second consumer, without a group: it assign()s every partition and reads from the
   * beginning, so no rebalance resets its positions and it fetches straight through the leader
   * change (Java only: the one whose position validation is checked).
   */
  startAssignedConsumer?(topic: string): Promise<ConsumerDriver>;
}

// -------------------------------------------------------------------------------------------------
// kcat (librdkafka 2.0.2)

/**
 * kcat -P -vv: one stderr line per delivery report ("% Message delivered to partition P (offset
 * O)"), printed when kcat next polls (after its next produce, or while it drains at the end). Each
 * record is keyed by its value (`-K :`, lines `v:v`): librdkafka 2.0.2's sticky choice for keyless
 * records kept one long-lived kcat on a single partition, the hash of the key spreads them.
 */
function kcatProducer(topic: string): ProducerDriver {
  const child = track(startLineProcess({ run, name: `kcat-producer-${topic}-${process.pid}`, command: 'kcat', args: ['-b', cluster.bootstrap().join(','), '-P', '-t', topic, '-K', ':', '-vv'], input: true }));
  const offered: number[] = [];
  return {
    offer(values) {
      offered.push(...values);
      child.write(values.map((value) => `${value}:${value}\n`).join(''));
    },
    async finish() {
      child.endInput();
      const status = await within(child.exited, 150_000, 'still running after 150 s');
      if (!child.hasExited()) await child.kill();
      const lines = child.stderr().split('\n');
      const delivered = lines.filter((line) => line.startsWith('% Message delivered to partition')).length;
      const failed = lines.filter((line) => line.includes('Delivery failed for message'));
      const failures = [...failed];
      if (status !== 0) failures.push(`kcat -P exited ${String(status)}`);
      // kcat reports deliveries without the value: all were stored only when every one was.
      if (delivered !== offered.length) failures.push(`kcat -P reported ${delivered} deliveries of ${offered.length} values`);
      const errors = librdkafkaErrors(child);
      return {
        acknowledged: failures.length === 0 ? offered : [],
        failures,
        summary: `${delivered} delivered, ${failed.length} failed, ${errors.length} librdkafka error lines${errors.length > 0 ? ` (first: ${errors[0]})` : ''}`,
      };
    },
  };
}

function kcatConsumer(topic: string, group: string): ConsumerDriver {
  const child = track(
    startLineProcess({
      run,
      name: `kcat-consumer-${topic}-${process.pid}`,
      command: 'kcat',
      args: ['-b', cluster.bootstrap().join(','), '-u', '-f', '%p %o %s\\n', '-X', 'auto.offset.reset=earliest', '-G', group, topic],
    }),
  );
  return {
    deliveries: () =>
      child.lines
        .filter((line) => line !== '')
        .map((line) => {
          const [partition, offset, value] = line.split(' ');
          return { partition: Number(partition), offset: Number(offset), value: Number(value) };
        }),
    // "% Group … rebalanced (memberid …): assigned: t [0], t [1], t [2]"
    assignments: () =>
      child
        .stderr()
        .split('\n')
        .filter((line) => line.includes('rebalanced') && line.includes('assigned:'))
        .map((line) => [...line.matchAll(new RegExp(`${topic} \\[(\\d+)\\]`, 'g'))].map((match) => Number(match[1]))),
    async stop() {
      // SIGTERM: kcat leaves its loop, closes the consumer (final commit) and exits.
      await child.stop(30_000);
    },
    describe: () => {
      const errors = librdkafkaErrors(child);
      return `${errors.length} librdkafka error lines${errors.length > 0 ? ` (first: ${errors[0]})` : ''}; stderr tail:\n${tail(child.stderr())}`;
    },
  };
}

/** librdkafka's own log lines of syslog levels 0–3 (emergency … error). */
function librdkafkaErrors(child: LineProcess): string[] {
  return child.stderr().split('\n').filter((line) => /^%[0-3]\|/.test(line));
}

const kcatClient: ClientDriver = {
  name: 'kcat (librdkafka 2.0.2)',
  idempotent: false,
  startConsumer: (topic, group) => Promise.resolve(kcatConsumer(topic, group)),
  startProducer: (topic) => Promise.resolve(kcatProducer(topic)),
};

// -------------------------------------------------------------------------------------------------
// kafkajs 2.2.4

/** kafkajs' producer and consumer on one client, whose WARN and ERROR log entries are kept for the report. */
function kafkajsClient(): ClientDriver {
  const logs: string[] = [];
  const kafka = new Kafka({
    clientId: 'replication-clients-kafkajs',
    brokers: cluster.bootstrap(),
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log }: LogEntry) => {
        logs.push(`${level === logLevel.ERROR ? 'ERROR' : 'WARN'} ${log.message}${typeof log['error'] === 'string' ? `: ${log['error']}` : ''}`);
      },
  });
  const logSummary = (): string => `${logs.length} kafkajs warnings/errors${logs.length > 0 ? ` (first: ${logs[0]})` : ''}`;
  return {
    name: 'kafkajs 2.2.4',
    idempotent: true,
    async startProducer(topic) {
      // The partitioner named is kafkajs 2's default (naming it only silences its warning).
      const producer = kafka.producer({ idempotent: true, createPartitioner: Partitioners.DefaultPartitioner });
      await producer.connect();
      const queue: number[] = [];
      const acknowledged: number[] = [];
      const failures: string[] = [];
      let ending = false;
      let sends = 0;
      const loop = (async () => {
        while (!ending || queue.length > 0) {
          if (queue.length === 0) {
            await sleep(20);
            continue;
          }
          const batch = queue.splice(0, CHUNK);
          sends += 1;
          try {
            await producer.send({ topic, messages: batch.map((value) => ({ value: String(value) })) });
            acknowledged.push(...batch);
          } catch (error) {
            for (const value of batch) failures.push(`${value}: ${(error as Error).message}`);
          }
        }
      })();
      return {
        offer: (values) => void queue.push(...values),
        async finish() {
          ending = true;
          await within(loop, 150_000, undefined);
          const left = queue.length;
          await producer.disconnect();
          if (left > 0) failures.push(`${left} values never sent`);
          return { acknowledged, failures, summary: `${sends} sends; ${logSummary()}` };
        },
      };
    },
    async startConsumer(topic, group) {
      const consumer = kafka.consumer({ groupId: group });
      const deliveries: Delivery[] = [];
      const assignments: number[][] = [];
      const crashes: string[] = [];
      consumer.on(consumer.events.GROUP_JOIN, (event) => {
        assignments.push([...(event.payload.memberAssignment[topic] ?? [])]);
      });
      consumer.on(consumer.events.CRASH, (event) => {
        crashes.push(`${event.payload.error.message} (restart: ${String(event.payload.restart)})`);
      });
      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          deliveries.push({ partition, offset: Number(message.offset), value: Number(message.value?.toString() ?? 'NaN') });
        },
      });
      return {
        deliveries: () => deliveries,
        assignments: () => assignments,
        stop: () => consumer.disconnect(),
        describe: () => `${crashes.length} consumer crashes${crashes.length > 0 ? ` (${crashes.join('; ')})` : ''}; ${logSummary()}`,
      };
    },
  };
}

// -------------------------------------------------------------------------------------------------
// Java clients (LineClient.java on kafka-clients 3.9.1 or 4.1.1)

/**
 * The JVM's logging: WARN and up to stderr, plus what shows the consumer's position validation
 * (OffsetsForLeaderEpochUtils and OffsetFetcher at DEBUG, SubscriptionState's "Truncation
 * detected" at INFO). 3.9's tools jars log through reload4j, the 4.x set through slf4j-simple.
 */
function javaLogging(version: 'three' | 'four'): string[] {
  const debug = ['org.apache.kafka.clients.consumer.internals.OffsetsForLeaderEpochUtils', 'org.apache.kafka.clients.consumer.internals.OffsetFetcher'];
  const info = ['org.apache.kafka.clients.consumer.internals.SubscriptionState'];
  if (version === 'three') {
    const file = join(runDir, 'replication-clients-log4j.properties');
    writeFileSync(file, [KAFKA_TOOLS_LOG4J, ...debug.map((name) => `log4j.logger.${name}=DEBUG`), ...info.map((name) => `log4j.logger.${name}=INFO`), ''].join('\n'));
    return [`-Dlog4j.configuration=file:${file}`];
  }
  return [
    '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
    '-Dorg.slf4j.simpleLogger.showDateTime=true',
    ...debug.map((name) => `-Dorg.slf4j.simpleLogger.log.${name}=debug`),
    ...info.map((name) => `-Dorg.slf4j.simpleLogger.log.${name}=info`),
  ];
}

/** Log lines of level ERROR (both layouts: "[date] ERROR msg (logger)" and "[thread] ERROR logger - msg"). */
function javaErrors(log: string): string[] {
  return log.split('\n').filter((line) => / ERROR /.test(line));
}

/**
 * The consumer's ERROR lines that a group moving to another coordinator causes: Tributary keeps
 * group membership in memory only (group-coordinator.ts), so the new coordinator does not know
 * the member, answers its auto-commit UNKNOWN_MEMBER_ID, and the client logs the failed commit
 * (as Kafka's client does whenever a member is fenced) before it rejoins. Kafka itself would
 * load the members with the group on the new coordinator.
 */
const COORDINATOR_MOVE_ERRORS = [/Offset commit failed on partition \S+ at offset \d+: The coordinator is not aware of this member/, /Asynchronous auto-commit of offsets failed: Offset commit cannot be completed since the consumer is not part of an active group/];

function isCoordinatorMoveError(line: string): boolean {
  return COORDINATOR_MOVE_ERRORS.some((pattern) => pattern.test(line));
}

function javaClient(version: 'three' | 'four'): ClientDriver & { readonly consumerLogs: Map<string, () => string>; readonly assignedConsumerLogs: Map<string, () => string> } {
  const jars = (): string => (version === 'three' ? kafkaToolsDir : kafkaClients4Dir);
  const label = version === 'three' ? KAFKA_VERSION : KAFKA_4_VERSION;
  const consumerLogs = new Map<string, () => string>();
  const assignedConsumerLogs = new Map<string, () => string>();
  const start = (name: string, args: readonly string[], input: boolean): LineProcess =>
    track(
      startLineProcess({
        run,
        name: `${name}-${process.pid}`,
        command: javaCommand(),
        args: ['-Xmx256m', ...javaLogging(version), '-cp', `${jars()}/*`, LINE_CLIENT, ...args],
        env: javaEnvironment(),
        input,
      }),
    );
  return {
    name: `Java client ${label}`,
    idempotent: true,
    consumerLogs,
    assignedConsumerLogs,
    startProducer(topic) {
      const child = start(`java-producer-${topic}`, ['produce', cluster.bootstrap().join(','), topic], true);
      let offered = 0;
      return Promise.resolve({
        offer(values) {
          offered += values.length;
          child.write(values.map((value) => `${value}\n`).join(''));
        },
        async finish() {
          child.endInput();
          await child.waitFor(() => child.lines.includes('done'), 'the producer to flush and close', 150_000).catch(() => undefined);
          const status = await within(child.exited, 10_000, 'still running 10 s after its input ended');
          if (!child.hasExited()) await child.kill();
          const acknowledged = child.lines.filter((line) => line.startsWith('ack ')).map((line) => Number(line.split(' ')[1]));
          const failed = child.lines.filter((line) => line.startsWith('fail '));
          const failures = [...failed];
          if (status !== 0) failures.push(`the producer JVM exited ${String(status)}; stderr tail:\n${tail(child.stderr())}`);
          if (acknowledged.length + failed.length < offered) failures.push(`${offered - acknowledged.length - failed.length} values without an outcome`);
          const warnings = child.stderr().split('\n').filter((line) => / WARN /.test(line));
          const errors = javaErrors(child.stderr());
          if (errors.length > 0) failures.push(`the producer logged ERRORs:\n${errors.slice(0, 10).join('\n')}`);
          return { acknowledged, failures, summary: `${acknowledged.length} acks, ${warnings.length} WARN lines${warnings.length > 0 ? ` (first: ${warnings[0]})` : ''}` };
        },
      });
    },
    startConsumer(topic, group) {
      const child = start(`java-consumer-${topic}`, ['consume', cluster.bootstrap().join(','), topic, group], false);
      consumerLogs.set(topic, () => child.stderr());
      return Promise.resolve(javaConsumerDriver(child));
    },
    startAssignedConsumer(topic) {
      const child = start(`java-assigned-consumer-${topic}`, ['consume-assigned', cluster.bootstrap().join(','), topic], false);
      assignedConsumerLogs.set(topic, () => child.stderr());
      return Promise.resolve(javaConsumerDriver(child));
    },
  };
}

/** LineClient's consume and consume-assigned output: "assigned P,…", "record P OFFSET EPOCH VALUE", "closed". */
function javaConsumerDriver(child: LineProcess): ConsumerDriver {
  return {
    deliveries: () =>
      child.lines
        .filter((line) => line.startsWith('record '))
        .map((line) => {
          const [, partition, offset, , value] = line.split(' ');
          return { partition: Number(partition), offset: Number(offset), value: Number(value) };
        }),
    assignments: () =>
      child.lines
        .filter((line) => line.startsWith('assigned '))
        .map((line) => line.slice('assigned '.length).split(',').filter((part) => part !== '').map(Number)),
    async stop() {
      // SIGTERM: the shutdown hook wakes the poll loop, which closes the consumer (a group consumer commits).
      await child.stop(30_000);
      expect(child.lines, `the Java consumer closed cleanly; stderr tail:\n${tail(child.stderr())}`).toContain('closed');
    },
    describe: () => {
      const warnings = child.stderr().split('\n').filter((line) => / WARN /.test(line));
      return `${warnings.length} WARN lines${warnings.length > 0 ? ` (first: ${warnings[0]})` : ''}; leader epochs seen: ${recordEpochs(child)}`;
    },
  };
}

/** "p0 [0,1] p1 [0] …" from the consumer's record lines: the leader epochs each partition's records carried. */
function recordEpochs(child: LineProcess): string {
  const byPartition = new Map<number, Set<number>>();
  for (const line of child.lines.filter((entry) => entry.startsWith('record '))) {
    const [, partition, , epoch] = line.split(' ');
    const set = byPartition.get(Number(partition)) ?? new Set<number>();
    set.add(Number(epoch));
    byPartition.set(Number(partition), set);
  }
  return [...byPartition].sort(([a], [b]) => a - b).map(([partition, epochs]) => `p${partition} [${[...epochs].sort((a, b) => a - b).join(',')}]`).join(' ') || 'none';
}

// -------------------------------------------------------------------------------------------------
// The scenario

function track(child: LineProcess): LineProcess {
  processes.push(child);
  return child;
}

function tail(text: string, lines = 30): string {
  return text.split('\n').slice(-lines).join('\n');
}

function range(from: number, count: number): number[] {
  return Array.from({ length: count }, (_, index) => from + index);
}

/** `promise`'s value, or `fallback` once `ms` have passed (no timer left behind either way). */
async function within<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<F>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `probe` until it holds; the failure says `what`, worked out when it fails (the state then). */
async function until(probe: () => boolean | Promise<boolean>, what: () => string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what()}`);
    await sleep(200);
  }
}

/** The first of `<prefix>-group-<n>` (n = 1, 2, …) whose coordinator is `brokerId`, by the brokers' own placement rule. */
function groupCoordinatedBy(prefix: string, brokerId: number): string {
  for (let n = 1; ; n += 1) {
    const group = `${prefix}-group-${n}`;
    if (coordinatorFor(group, BROKERS) === brokerId) return group;
  }
}

/** The broker FindCoordinator names for `group`. */
async function findCoordinator(group: string): Promise<number> {
  const connection = await KafkaConnection.open(LOOPBACK, cluster.broker(cluster.liveBrokerIds()[0] ?? 1).port, { clientId: 'replication-clients-admin' });
  try {
    const answer = await connection.request(FindCoordinatorApi, 1, { key: group, keyType: 0 });
    if (answer.errorCode !== 0) throw new Error(`FindCoordinator(${group}): error ${answer.errorCode} ${answer.errorMessage ?? ''}`);
    return answer.nodeId;
  } finally {
    connection.close();
  }
}

/** Offers `values` in chunks of CHUNK every CHUNK_INTERVAL_MS. */
async function feed(producer: ProducerDriver, values: readonly number[]): Promise<void> {
  for (let at = 0; at < values.length; at += CHUNK) {
    producer.offer(values.slice(at, at + CHUNK));
    await sleep(CHUNK_INTERVAL_MS);
  }
}

interface ScenarioResult {
  readonly topic: string;
  readonly victim: number;
  /** Partitions the victim led when it was killed. */
  readonly victimPartitions: number[];
}

/** Each partition's records from the final read, by offset. */
function logIndex(finalRead: readonly FinalPartition[]): Map<number, Map<number, number>> {
  return new Map(finalRead.map(({ partition, records }) => [partition, new Map(records.map((record) => [record.offset, record.value]))]));
}

/** Each broker log's size now: where a scenario's part of it starts. */
function brokerLogSizes(): Map<number, number> {
  return new Map(BROKERS.map((id) => [id, existsSync(cluster.broker(id).logFile) ? statSync(cluster.broker(id).logFile).size : 0]));
}

/** The brokers' log lines (pino JSON) of at least `level` written since `from`, as "broker N: msg (err)". */
function brokerLogLines(from: ReadonlyMap<number, number>, level: number): string[] {
  return BROKERS.flatMap((id) => {
    const text = readFileSync(cluster.broker(id).logFile).subarray(from.get(id) ?? 0).toString('utf8');
    return text.split('\n').flatMap((line) => {
      if (!line.startsWith('{')) return [];
      const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } };
      return (entry.level ?? 0) >= level ? [`broker ${id}: ${entry.msg ?? line}${entry.err?.message === undefined ? '' : ` (${entry.err.message})`}`] : [];
    });
  });
}

function countBy<T>(items: readonly T[]): Map<T, number> {
  const counts = new Map<T, number>();
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
  return counts;
}

async function failoverScenario(client: ClientDriver, slug: string, firstValue: number): Promise<ScenarioResult> {
  const began = Date.now();
  const logStart = brokerLogSizes();
  const timeline: string[] = [];
  const mark = (what: string): void => void timeline.push(`${what} ${((Date.now() - began) / 1000).toFixed(1)}`);
  const topic = `clients-${slug}`;
  const phaseA = range(firstValue, PHASE_A);
  const phaseB = range(firstValue + PHASE_A, PHASE_B);
  const phaseC = range(firstValue + PHASE_A + PHASE_B, PHASE_C);
  // min.insync.replicas=2 is every broker's setting (checked in beforeAll): CreateTopics refuses it
  // as a topic config, though the broker would honour a topic override.
  await cluster.createTopic(topic, { partitions: PARTITIONS, replicationFactor: 3, timeoutMs: 60_000 });
  // The victim: partition 0's leader. The group is named so that the victim coordinates it too,
  // so the consumer rides out a coordinator move as well as a leader change.
  const before = await cluster.waitForLeader(topic, 0);
  const victim = before.leader;
  const group = groupCoordinatedBy(`clients-${slug}`, victim);
  expect(await findCoordinator(group), `FindCoordinator(${group})`).toBe(victim);

  // Both clients start together (a JVM takes seconds), but the first value goes out only once the
  // consumer is in the group with every partition.
  const [consumer, producer, assigned] = await Promise.all([client.startConsumer(topic, group), client.startProducer(topic), client.startAssignedConsumer?.(topic)]);
  await until(() => new Set(consumer.assignments().flat()).size === PARTITIONS, () => `${client.name}'s consumer to be assigned all ${PARTITIONS} partitions (${consumer.describe()})`, 60_000);
  mark('consumer assigned');
  const received = (): Set<number> => new Set(consumer.deliveries().map((delivery) => delivery.value));

  // A: the flow works end to end, on every partition, before any fault. (Not all of A need have
  // arrived: kcat reads its input 128 bytes at a time, so its last few lines wait for more.)
  await feed(producer, phaseA);
  const flowing = (): boolean => phaseA.filter((value) => received().has(value)).length >= (PHASE_A * 2) / 3 && new Set(consumer.deliveries().map((delivery) => delivery.partition)).size === PARTITIONS;
  await until(flowing, () => `${client.name}'s consumer to receive most of the first ${PHASE_A} values, on every partition (has ${received().size}; ${consumer.describe()})`, 60_000);
  // The assigned consumer too has records of every partition (so positions with a leader epoch) before the kill.
  if (assigned !== undefined) {
    await until(() => new Set(assigned.deliveries().map((delivery) => delivery.partition)).size === PARTITIONS, () => `${client.name}'s assigned consumer to receive records of every partition (${assigned.describe()})`, 60_000);
  }
  mark('flowing');

  // B: the leader of partition 0 (the group's coordinator) dies with records on their way; the
  // rest of B waits for the new leader.
  const victimPartitions = (await cluster.topicState(topic, victim)).filter((state) => state.leader === victim).map((state) => state.partition);
  await feed(producer, phaseB.slice(0, PHASE_B / 2));
  await cluster.kill(victim);
  mark('killed');
  await feed(producer, phaseB.slice(PHASE_B / 2));
  const after = await cluster.waitForLeaderChange(before, { timeoutMs: 60_000 });
  mark('new leader');
  expect(after.leader, `${describeState(after)}: a surviving ISR member leads`).not.toBe(victim);
  expect(after.leaderEpoch).toBeGreaterThan(before.leaderEpoch);

  // C: the killed broker comes back (a follower now) while the last values go out.
  await cluster.restart(victim);
  mark('restarted');
  await feed(producer, phaseC);
  const outcome = await producer.finish();
  mark('producer done');

  // Healing: the restarted broker catches up and rejoins every ISR; then the whole log is read.
  for (let partition = 0; partition < PARTITIONS; partition += 1) await cluster.waitForIsr(topic, partition, BROKERS, { timeoutMs: 90_000 });
  mark('ISR full');
  const acknowledged = new Set(outcome.acknowledged);
  await until(
    () => [...acknowledged].every((value) => received().has(value)),
    () => `${client.name}'s consumer to receive all ${acknowledged.size} acknowledged values (has ${[...acknowledged].filter((value) => received().has(value)).length}; ${consumer.describe()})`,
    90_000,
  );
  const finalRead = await cluster.readAll(topic);
  // Every record in the log reached the consumer too (a value stored though unacknowledged included).
  const stored = finalRead.reduce((sum, { records }) => sum + records.length, 0);
  const distinct = (): number => new Set(consumer.deliveries().map((delivery) => `${delivery.partition}:${delivery.offset}`)).size;
  await until(() => distinct() >= stored, () => `${client.name}'s consumer to reach the end of every partition (${distinct()} of ${stored} records; ${consumer.describe()})`, 60_000);
  // C5: the group's commits reach the end of every partition while the consumer runs (auto-commit),
  // and its close leaves them there. (Waiting for the auto-commit first: a close right after the
  // group moved back to the restarted broker commits as a member that coordinator does not know.)
  const ends = finalRead.map(({ partition, records }) => [partition, (records.at(-1)?.offset ?? -1) + 1]);
  let committed: number[][] = [];
  const readCommitted = async (): Promise<number[][]> => {
    const [fetched] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    return (fetched?.partitions ?? []).sort((a, b) => a.partition - b.partition).map((entry) => [entry.partition, Number(entry.offset)]);
  };
  await until(
    async () => JSON.stringify((committed = await readCommitted().catch(() => committed))) === JSON.stringify(ends),
    () => `${client.name}'s group ${group} to commit the end of every partition ${JSON.stringify(ends)} (committed: ${JSON.stringify(committed)}; ${consumer.describe()})`,
    60_000,
  );
  mark('committed');
  await consumer.stop();
  mark('consumer closed');
  if (assigned !== undefined) {
    await until(() => new Set(assigned.deliveries().map((delivery) => `${delivery.partition}:${delivery.offset}`)).size >= stored, () => `${client.name}'s assigned consumer to reach the end of every partition (${assigned.describe()})`, 60_000);
    await assigned.stop();
  }

  const deliveries = consumer.deliveries();
  const assignments = consumer.assignments();
  const context = `${client.name}, victim broker ${victim} (led partitions ${victimPartitions.join(',')}); ${describeState(before)} → ${describeState(after)}\nproducer: ${outcome.summary}\nconsumer: ${consumer.describe()}`;
  const sent = [...phaseA, ...phaseB, ...phaseC];
  const sentSet = new Set(sent);
  const logValues = finalRead.flatMap(({ records }) => records.map((record) => record.value));
  const logCounts = countBy(logValues);

  // P1: an outcome for every value, and none failed.
  expect(outcome.failures.slice(0, 20), context).toEqual([]);
  expect(outcome.acknowledged.length, context).toBe(sent.length);
  // P2: every acknowledged value is stored; nothing else is.
  expect(outcome.acknowledged.filter((value) => !logCounts.has(value)).slice(0, 20), `acknowledged values missing from the log; ${context}`).toEqual([]);
  expect(logValues.filter((value) => !sentSet.has(value)).slice(0, 20), `values in the log that were never sent; ${context}`).toEqual([]);
  // The producer did write through the failover: the partitions the victim led got values sent after the kill.
  const afterKill = new Set([...phaseB.slice(PHASE_B / 2), ...phaseC]);
  for (const partition of victimPartitions) {
    const written = finalRead.find((entry) => entry.partition === partition)?.records.filter((record) => afterKill.has(record.value)).length ?? 0;
    expect(written, `values sent after the kill stored in partition ${partition}, which broker ${victim} led; ${context}`).toBeGreaterThan(0);
  }
  // P3: the idempotent producers stored each value once.
  const storedTwice = [...logCounts].filter(([, count]) => count > 1).map(([value, count]) => `${value} ×${count}`);
  if (client.idempotent) expect(storedTwice.slice(0, 20), `values stored more than once by an idempotent producer; ${context}`).toEqual([]);

  // C1: the consumer received every acknowledged value.
  const receivedValues = received();
  expect(outcome.acknowledged.filter((value) => !receivedValues.has(value)).slice(0, 20), `acknowledged values the consumer never received; ${context}`).toEqual([]);
  // C2: what it received is what the log holds at that offset.
  const index = logIndex(finalRead);
  const mismatched = deliveries.filter((delivery) => index.get(delivery.partition)?.get(delivery.offset) !== delivery.value);
  expect(mismatched.slice(0, 20).map((d) => `p${d.partition}@${d.offset}=${d.value} (log: ${String(index.get(d.partition)?.get(d.offset))})`), `records received that the log does not hold; ${context}`).toEqual([]);
  // C3 and C4: per partition, no skip; rewinds only with a new assignment of the partition.
  let redelivered = 0;
  for (let partition = 0; partition < PARTITIONS; partition += 1) {
    const offsets = deliveries.filter((delivery) => delivery.partition === partition).map((delivery) => delivery.offset);
    const skips: string[] = [];
    let rewinds = 0;
    offsets.forEach((offset, at) => {
      const previous = at === 0 ? -1 : (offsets[at - 1] ?? -1);
      if (offset <= previous) rewinds += 1;
      else if (offset !== previous + 1) skips.push(`${previous} → ${offset}`);
    });
    redelivered += offsets.length - new Set(offsets).size;
    const assigned = assignments.filter((partitions) => partitions.includes(partition)).length;
    expect(skips, `partition ${partition}: offsets the consumer skipped; ${context}`).toEqual([]);
    expect(rewinds, `partition ${partition}: rewinds (${rewinds}) beyond re-assignments (${assigned} assignments); ${context}`).toBeLessThanOrEqual(Math.max(0, assigned - 1));
  }

  // A1: the assigned consumer (no group, so nothing ever resets it) read every partition once, in
  // order, from offset 0 to the end, through the leader change: exactly the log.
  if (assigned !== undefined) {
    for (const { partition, records } of finalRead) {
      const read = assigned.deliveries().filter((delivery) => delivery.partition === partition).map((delivery) => `${delivery.offset}=${delivery.value}`);
      expect(read, `partition ${partition}: what the assigned consumer read, against the log; ${assigned.describe()}`).toEqual(records.map((record) => `${record.offset}=${record.value}`));
    }
  }

  // C5 (second half): the close left the commits at the end.
  expect(await readCommitted(), `the group's committed offsets after the consumer closed; ${context}`).toEqual(ends);

  // I6: the replicas agree below the high watermark.
  for (let partition = 0; partition < PARTITIONS; partition += 1) {
    const comparison = await cluster.checkReplicaFiles(topic, partition);
    expect(comparison.ok, formatReplicaComparison(comparison)).toBe(true);
  }

  // The brokers logged no error (warnings, such as a follower failing to fetch from the dead leader, are reported).
  const brokerErrors = brokerLogLines(logStart, 50);
  expect(brokerErrors.slice(0, 20), `broker log errors; ${context}`).toEqual([]);
  const brokerWarnings = brokerLogLines(logStart, 40);
  console.log(`  broker log: ${brokerErrors.length} errors, ${brokerWarnings.length - brokerErrors.length} warnings\n    ${[...countBy(brokerWarnings.map((line) => line.replace(/\d+/g, 'N')))].map(([line, count]) => `${count}× ${line}`).join('\n    ')}`);
  console.log(
    `${client.name}: ${sent.length} values sent, ${outcome.acknowledged.length} acknowledged, ${stored} records stored` +
      ` (${storedTwice.length} values stored twice), consumer received ${deliveries.length} records (${redelivered} re-deliveries) over ${assignments.length} assignments;` +
      ` broker ${victim} killed (led ${victimPartitions.map((p) => `p${p}`).join(',')}), p0 leader ${before.leader}@${before.leaderEpoch} → ${after.leader}@${after.leaderEpoch};` +
      ` producer: ${outcome.summary}; consumer: ${consumer.describe().split('\n')[0] ?? ''}; seconds: ${timeline.join(', ')}, checked ${((Date.now() - began) / 1000).toFixed(1)}`,
  );
  return { topic, victim, victimPartitions };
}

/**
 * The Java consumers' position validation after the leader change. The client keeps Metadata's
 * leader epochs only from Metadata v9 up (MetadataResponse.hasReliableLeaderEpochs: before 2.4 a
 * broker's epochs could be stale during reassignments), which the brokers advertise, so its
 * positions carry the leader epoch of the records read; when Metadata shows a partition's new
 * leader epoch, a consumer fetching that partition validates its position with
 * OffsetForLeaderEpoch before it fetches on (KIP-320).
 *
 * Required of the assigned consumer, which fetches through the leader change: a "Handling
 * OffsetsForLeaderEpoch response for <topic>-<p>" line for a partition whose leader died. The
 * group consumer validates too when its positions live until the new leader is known, but that
 * is a race it may lose: the kill moves its coordinator as well, and when the rebalance comes
 * first, with no auto-commit landed (the new coordinator does not know the member, see
 * COORDINATOR_MOVE_ERRORS), it resets to the earliest offset with ListOffsets, a position without
 * an epoch, so there is nothing to validate. Its validations are reported, not required. Of both:
 * no "Truncation detected", no "does not support the required protocol version", no ERROR (but
 * the group consumer's coordinator-move ones).
 */
function expectPositionValidation(groupLog: string, assignedLog: string, result: ScenarioResult): void {
  const validated = result.victimPartitions.filter((partition) => assignedLog.includes(`Handling OffsetsForLeaderEpoch response for ${result.topic}-${partition}.`));
  const context = (which: string, log: string): string =>
    `Java ${which} consumer log (${result.topic}, victim ${result.victim} led partitions ${result.victimPartitions.join(',')}; brokers advertise Metadata up to v${metadataMaxVersion}):\n${tail(log, 60)}`;
  expect(validated.length, `the assigned consumer's validation of a partition whose leader died; ${context('assigned', assignedLog)}`).toBeGreaterThan(0);
  for (const [which, log] of [['group', groupLog], ['assigned', assignedLog]] as const) {
    expect(log.split('\n').filter((line) => line.includes('Truncation detected')), context(which, log)).toEqual([]);
    expect(log.split('\n').filter((line) => line.includes('does not support the required protocol version')), context(which, log)).toEqual([]);
    expect(javaErrors(log).filter((line) => which === 'assigned' || !isCoordinatorMoveError(line)), context(which, log)).toEqual([]);
    const validations = log.split('\n').filter((line) => line.includes('Handling OffsetsForLeaderEpoch response'));
    const retries = log.split('\n').filter((line) => line.includes('Attempt to fetch offsets for partition'));
    console.log(`  ${result.topic} ${which} consumer: ${validations.length} OffsetsForLeaderEpoch validations (${validations.map((line) => /response for (\S+)\. Got offset (\d+) for epoch (-?\d+)/.exec(line)?.slice(1).join(' ') ?? line).join('; ')}), ${retries.length} retried`);
    for (const line of validations.slice(0, 3)) console.log(`    ${line.trim()}`);
  }
  const commitErrors = javaErrors(groupLog).filter(isCoordinatorMoveError).length;
  if (commitErrors > 0) console.log(`  ${result.topic}: ${commitErrors} ERROR lines of auto-commits the moved coordinator refused (UNKNOWN_MEMBER_ID; the consumer rejoined)`);
}

describe('kcat, kafkajs and the Java client produce and consume through a failover', () => {
  it('kcat -P (librdkafka defaults: acks=all, not idempotent) and kcat -G: every delivered value read back', { timeout: 240_000 }, async () => {
    await failoverScenario(kcatClient, 'kcat', 1_000_000);
  });

  it('kafkajs idempotent producer and consumer.run in a group: every value stored once and read back', { timeout: 240_000 }, async () => {
    await failoverScenario(kafkajsClient(), 'kafkajs', 2_000_000);
  });

  it(`Java client ${KAFKA_VERSION} (default idempotent producer, group and assigned consumers): every value stored once and read back; the assigned consumer validates its position with OffsetForLeaderEpoch after the leader change`, { timeout: 240_000 }, async () => {
    const client = javaClient('three');
    const result = await failoverScenario(client, 'java3', 3_000_000);
    expectPositionValidation(client.consumerLogs.get(result.topic)?.() ?? '', client.assignedConsumerLogs.get(result.topic)?.() ?? '', result);
  });

  it(`Java client ${KAFKA_4_VERSION} (default idempotent producer, group and assigned consumers): every value stored once and read back; the assigned consumer validates its position with OffsetForLeaderEpoch after the leader change`, { timeout: 240_000 }, async () => {
    const client = javaClient('four');
    const result = await failoverScenario(client, 'java4', 4_000_000);
    expectPositionValidation(client.consumerLogs.get(result.topic)?.() ?? '', client.assignedConsumerLogs.get(result.topic)?.() ?? '', result);
  });
});
