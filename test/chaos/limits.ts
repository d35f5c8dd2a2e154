/**
 * Resource-exhaustion fault runs (issue #22; reliability reference §8.5 H1, H6, H7): one
 * standalone `tributary broker start` process with a PLAINTEXT and a SASL_PLAINTEXT listener and
 * `max.connections` set, and four attacks, each followed by a check that the broker still serves
 * a real client (a produce and a fetch read back):
 *
 *   connection-flood   many TCP connections opened at once and held: those over max.connections
 *                      are closed at once, the broker holds at most the limit
 *   oversized-frames   size prefixes a broker must refuse before allocating (−1, 0, INT32_MAX,
 *                      socket.request.max.bytes + 1, a TLS ClientHello and `GET /` read as sizes),
 *                      and a pre-authentication frame over sasl.server.max.receive.size: every
 *                      connection closed, memory flat
 *   slowloris          connections that each announce a 1 MiB request and send it a byte at a
 *                      time: memory bounded, other clients served meanwhile
 *   tiny-produce       many one-record Produce requests pipelined over a few connections: every
 *                      one answered, offsets contiguous, memory bounded
 *
 * Each reports the broker's peak RSS during the attack (the kernel's high-water mark, reset
 * before each), above the RSS before it.
 */
import { createConnection, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { KafkaConnection } from '../../src/client/connection.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { ProduceApi } from '../../src/protocol/apis/produce.js';
import { encodeRecordBatch } from '../../src/protocol/records.js';
import { freePort, LOOPBACK } from '../services/network.js';
import type { ServiceRun } from '../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../support/brokers.js';
import { peakResidentBytes, residentBytes, resetPeakResident } from '../support/process-memory.js';
import { readVerified } from '../support/verified-read.js';

export const LIMIT_SCENARIOS = ['connection-flood', 'oversized-frames', 'slowloris', 'tiny-produce'] as const;
export type LimitScenario = (typeof LIMIT_SCENARIOS)[number];

export interface LimitCounts {
  /** connection-flood: connections opened. */
  readonly floodConnections: number;
  /** oversized-frames: connections per hostile size. */
  readonly oversizedPerSize: number;
  /** slowloris: connections, and how long they trickle. */
  readonly slowConnections: number;
  readonly slowMs: number;
  /** tiny-produce: requests. */
  readonly tinyRequests: number;
}

export const FULL_LIMIT_COUNTS: LimitCounts = { floodConnections: 10_000, oversizedPerSize: 100, slowConnections: 900, slowMs: 30_000, tinyRequests: 1_000_000 };
export const SHORT_LIMIT_COUNTS: LimitCounts = { floodConnections: 1_500, oversizedPerSize: 5, slowConnections: 200, slowMs: 4_000, tinyRequests: 20_000 };

/** The broker's limit in these runs (Kafka's default is unlimited; a deployment facing untrusted networks sets one). */
export const MAX_CONNECTIONS = 1000;
const SOCKET_REQUEST_MAX_BYTES = 104_857_600;
const SASL_MAX_RECEIVE = 524_288;

export interface LimitResult {
  readonly scenario: LimitScenario;
  /** Connections, frames or requests thrown at the broker. */
  readonly injected: number;
  /** Of those, refused (closed by the broker) and served (answered). */
  readonly refused: number;
  readonly served: number;
  readonly rssBeforeBytes: number;
  readonly peakRssBytes: number;
  readonly seconds: number;
  readonly notes: readonly string[];
  readonly violations: readonly string[];
}

export interface LimitsOptions {
  readonly run: ServiceRun;
  readonly scenarios: readonly LimitScenario[];
  readonly counts: LimitCounts;
  readonly say?: (line: string) => void;
}

const TOPIC = 'limits';
const TINY_TOPIC = 'limits-tiny';

async function createTopics(broker: BrokerProcess, names: readonly string[]): Promise<void> {
  const connection = await KafkaConnection.open(LOOPBACK, broker.port, { requestTimeoutMs: 30_000 });
  try {
    const answer = await connection.request(CreateTopicsApi, 4, {
      topics: names.map((name) => ({ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] })),
      timeoutMs: 30_000,
      validateOnly: false,
    });
    const failed = answer.topics.filter((topic) => topic.errorCode !== 0);
    if (failed.length > 0) throw new Error(`CreateTopics failed: ${failed.map((topic) => `${topic.name} ${topic.errorCode}`).join(', ')}`);
  } finally {
    connection.close();
  }
}

export async function runLimits(options: LimitsOptions): Promise<{ results: LimitResult[]; brokerLog: string }> {
  const saslPort = await freePort();
  const broker = await startBrokerProcess({
    run: options.run,
    id: 1,
    settings: (port) => ({
      listeners: `PLAINTEXT://${LOOPBACK}:${port},SASL_PLAINTEXT://${LOOPBACK}:${saslPort}`,
      'max.connections': String(MAX_CONNECTIONS),
      'log.flush.interval.ms': '50',
    }),
  });
  const results: LimitResult[] = [];
  let served = 0;
  try {
    await createTopics(broker, [TOPIC, TINY_TOPIC]);
    for (const scenario of options.scenarios) {
      const pid = broker.daemon.pid;
      const rssBeforeBytes = residentBytes(pid);
      const exactPeak = resetPeakResident(pid);
      const started = Date.now();
      const outcome = await ATTACKS[scenario](broker, saslPort, options.counts);
      const violations = [...outcome.violations];
      if (broker.daemon.hasExited()) violations.push(`the broker process exited during ${scenario}`);
      else {
        // The broker is still of use: a real client's records go in and come back.
        try {
          served += 1;
          await serveCheck(broker, `${scenario}-${served}`);
        } catch (error) {
          violations.push(`after ${scenario} the broker did not serve a produce and fetch: ${(error as Error).message}`);
        }
      }
      const result: LimitResult = {
        scenario,
        ...outcome,
        rssBeforeBytes,
        peakRssBytes: Math.max(peakResidentBytes(pid), rssBeforeBytes),
        seconds: Math.round((Date.now() - started) / 100) / 10,
        notes: exactPeak ? outcome.notes : [...outcome.notes, 'peak RSS is the whole life of the process (clear_refs refused)'],
        violations,
      };
      results.push(result);
      options.say?.(formatLimitLine(result));
    }
  } finally {
    await broker.stop().catch(() => undefined);
  }
  return { results, brokerLog: broker.logFile };
}

type AttackOutcome = Pick<LimitResult, 'injected' | 'refused' | 'served' | 'notes' | 'violations'>;

const ATTACKS: Readonly<Record<LimitScenario, (broker: BrokerProcess, saslPort: number, counts: LimitCounts) => Promise<AttackOutcome>>> = {
  'connection-flood': connectionFlood,
  'oversized-frames': oversizedFrames,
  slowloris,
  'tiny-produce': tinyProduce,
};

/** A raw connection that records whether (and when) the other side closed it. */
interface Probe {
  readonly socket: Socket;
  closed: boolean;
  connected: boolean;
}

function openProbe(port: number): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: LOOPBACK, port });
    const probe: Probe = { socket, closed: false, connected: false };
    socket.on('error', () => undefined);
    socket.on('close', () => {
      probe.closed = true;
      resolve(probe);
    });
    socket.once('connect', () => {
      probe.connected = true;
      resolve(probe);
    });
  });
}

async function openMany(port: number, count: number): Promise<Probe[]> {
  const probes: Probe[] = [];
  for (let opened = 0; opened < count; opened += 200) {
    probes.push(...(await Promise.all(Array.from({ length: Math.min(200, count - opened) }, () => openProbe(port)))));
  }
  return probes;
}

function closeAll(probes: readonly Probe[]): void {
  for (const probe of probes) probe.socket.destroy();
}

async function connectionFlood(broker: BrokerProcess, _saslPort: number, counts: LimitCounts): Promise<AttackOutcome> {
  const violations: string[] = [];
  const probes = await openMany(broker.port, counts.floodConnections);
  await sleep(2000);
  const open = probes.filter((probe) => !probe.closed).length;
  const refused = probes.length - open;
  if (open > MAX_CONNECTIONS) violations.push(`${open} flood connections still open after 2 s; max.connections is ${MAX_CONNECTIONS}`);
  if (counts.floodConnections > MAX_CONNECTIONS && refused < counts.floodConnections - MAX_CONNECTIONS) {
    violations.push(`only ${refused} of ${counts.floodConnections} connections refused at max.connections ${MAX_CONNECTIONS}`);
  }
  closeAll(probes);
  await sleep(500); // the broker sees the closes and frees the slots
  return { injected: probes.length, refused, served: open, notes: [`max.connections ${MAX_CONNECTIONS}`], violations };
}

/** The size prefixes a broker must refuse before allocating: their 4 bytes, then a little more. */
const HOSTILE_SIZES: readonly { readonly name: string; readonly bytes: Buffer }[] = [
  { name: 'size −1', bytes: int32(-1) },
  { name: 'size 0', bytes: int32(0) },
  { name: 'size INT32_MAX', bytes: int32(0x7fffffff) },
  { name: 'socket.request.max.bytes + 1', bytes: int32(SOCKET_REQUEST_MAX_BYTES + 1) },
  // A TLS ClientHello's first bytes (handshake record, TLS 1.0 record version, length): 369,295,616 and more.
  { name: 'TLS ClientHello on the plaintext port', bytes: Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]) },
  { name: '"GET /" (1,195,725,856)', bytes: Buffer.from('GET / HTTP/1.1\r\nHost: broker\r\n\r\n') },
];

function int32(value: number): Buffer {
  const bytes = Buffer.alloc(8, 0x41);
  bytes.writeInt32BE(value, 0);
  return bytes;
}

async function oversizedFrames(broker: BrokerProcess, saslPort: number, counts: LimitCounts): Promise<AttackOutcome> {
  const violations: string[] = [];
  const attempts: { readonly name: string; readonly port: number; readonly bytes: Buffer }[] = [
    ...HOSTILE_SIZES.map((size) => ({ ...size, port: broker.port })),
    // Before authentication a SASL listener accepts small frames only (CVE-2022-34917).
    { name: 'pre-authentication frame over sasl.server.max.receive.size', port: saslPort, bytes: int32(SASL_MAX_RECEIVE + 1) },
  ];
  let injected = 0;
  let refused = 0;
  for (const attempt of attempts) {
    const probes = await openMany(attempt.port, counts.oversizedPerSize);
    for (const probe of probes) if (probe.connected && !probe.closed) probe.socket.write(attempt.bytes);
    injected += probes.length;
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && probes.some((probe) => !probe.closed)) await sleep(50);
    const open = probes.filter((probe) => !probe.closed).length;
    refused += probes.length - open;
    if (open > 0) violations.push(`${open} of ${probes.length} connections that sent ${attempt.name} still open after 5 s`);
    closeAll(probes);
  }
  return { injected, refused, served: 0, notes: [`${attempts.length} hostile frame kinds × ${counts.oversizedPerSize}`], violations };
}

async function slowloris(broker: BrokerProcess, _saslPort: number, counts: LimitCounts): Promise<AttackOutcome> {
  const violations: string[] = [];
  const probes = await openMany(broker.port, Math.min(counts.slowConnections, MAX_CONNECTIONS - 10));
  const live = probes.filter((probe) => probe.connected && !probe.closed);
  for (const probe of live) probe.socket.write(int32(1 << 20).subarray(0, 4));
  let trickled = 0;
  const trickle = setInterval(() => {
    for (const probe of live) if (!probe.closed) probe.socket.write(Buffer.from([0x42]));
    trickled += 1;
  }, 500);
  let served = 0;
  try {
    // Other clients are served while the slow ones hold their connections.
    const until = Date.now() + counts.slowMs;
    while (Date.now() < until) {
      await serveCheck(broker, `slowloris-${served}`);
      served += 1;
      await sleep(500);
    }
  } catch (error) {
    violations.push(`a real client was not served while ${live.length} slow clients trickled: ${(error as Error).message}`);
  } finally {
    clearInterval(trickle);
  }
  const closedByBroker = live.filter((probe) => probe.closed).length;
  closeAll(probes);
  await sleep(500);
  return { injected: live.length, refused: closedByBroker, served, notes: [`each announced a 1 MiB request and sent ${trickled} bytes of it over ${counts.slowMs / 1000} s`], violations };
}

async function tinyProduce(broker: BrokerProcess, _saslPort: number, counts: LimitCounts): Promise<AttackOutcome> {
  const violations: string[] = [];
  const connections = await Promise.all(Array.from({ length: 4 }, () => KafkaConnection.open(LOOPBACK, broker.port, { requestTimeoutMs: 60_000 })));
  const topic = TINY_TOPIC;
  let next = 0;
  let answered = 0;
  const offsets: bigint[] = [];
  const errors = new Map<number, number>();
  try {
    await Promise.all(
      connections.flatMap((connection) =>
        Array.from({ length: 32 }, async () => {
          while (next < counts.tinyRequests) {
            next += 1;
            const response = await connection.request(ProduceApi, 3, {
              transactionalId: null,
              acks: 1,
              timeoutMs: 30_000,
              topicData: [{ name: topic, partitionData: [{ index: 0, records: encodeRecordBatch([{ value: Buffer.from('t') }]) }] }],
            });
            const partition = response.responses[0]?.partitionResponses[0];
            const code = partition?.errorCode ?? -1;
            if (code !== 0) errors.set(code, (errors.get(code) ?? 0) + 1);
            else {
              answered += 1;
              offsets.push(partition?.baseOffset ?? -1n);
            }
          }
        }),
      ),
    );
  } finally {
    for (const connection of connections) connection.close();
  }
  const sorted = offsets.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const first = sorted[0] ?? 0n;
  const gaps = sorted.filter((offset, index) => offset !== first + BigInt(index)).length;
  if (gaps > 0) violations.push(`${gaps} of ${sorted.length} acknowledged offsets are not contiguous`);
  const failed = [...errors.values()].reduce((sum, count) => sum + count, 0);
  for (const [code, count] of errors) violations.push(`${count} requests answered with error ${code}`);
  return { injected: counts.tinyRequests, refused: failed, served: answered, notes: [`4 connections × 32 in flight, one 1-record batch per request, acks=1`], violations };
}

/** Produces 10 records with acks=−1 and reads the partition back, checked. */
async function serveCheck(broker: BrokerProcess, tag: string): Promise<void> {
  const connection = await KafkaConnection.open(LOOPBACK, broker.port, { requestTimeoutMs: 15_000 });
  try {
    const values = Array.from({ length: 10 }, (_, index) => `${tag}-${index}`);
    const response = await connection.request(ProduceApi, 3, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 10_000,
      topicData: [{ name: TOPIC, partitionData: [{ index: 0, records: encodeRecordBatch(values.map((value) => ({ value: Buffer.from(value) }))) }] }],
    });
    const partition = response.responses[0]?.partitionResponses[0];
    if (partition?.errorCode !== 0) throw new Error(`produce to ${TOPIC} answered error ${partition?.errorCode ?? 'none'}`);
    const baseOffset = partition.baseOffset;
    const read = await readVerified(connection, TOPIC, 0, { probes: 0, random: Math.random });
    if (read.violations.length > 0) throw new Error(read.violations.join('; '));
    const got = values.map((_, index) => read.records.get(baseOffset + BigInt(index))?.value);
    if (got.join(',') !== values.join(',')) throw new Error(`read back ${got.join(',')} instead of ${values.join(',')}`);
  } finally {
    connection.close();
  }
}

const mib = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(0)} MiB`;

export function formatLimitLine(result: LimitResult): string {
  return (
    `${result.scenario}: ${result.injected} injected, ${result.refused} refused, ${result.served} served, ` +
    `broker RSS ${mib(result.rssBeforeBytes)} before, peak ${mib(result.peakRssBytes)} (+${mib(result.peakRssBytes - result.rssBeforeBytes)}), ` +
    `${result.violations.length} violations in ${result.seconds} s${result.notes.length > 0 ? ` (${result.notes.join('; ')})` : ''}`
  );
}
