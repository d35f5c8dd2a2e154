/**
 * `tributary groups --bootstrap-server` against a standalone broker, whose coordination store is
 * inside the broker process (no ZooKeeper to read): a librdkafka group (kcat -G) is listed,
 * described, refused a reset while it runs, reset once it stopped (and kcat then reads from
 * there), and deleted. Also: exactly one of --zookeeper and --bootstrap-server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { Producer } from '../../../src/client/producer.js';
import { waitUntil } from '../../services/process.js';
import { startInProcessBroker } from '../../support/brokers.js';
import { runTributary, type CommandResult } from '../../support/cli.js';

const tributary = (...args: string[]): Promise<CommandResult> => runTributary(args);

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

interface Kcat {
  /** `partition offset` of each record printed so far. */
  readonly lines: string[];
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
}

/** kcat's balanced consumer (librdkafka's KafkaConsumer) in group `group`, committing every 100 ms; -u: each line at once. */
function kcatGroup(bootstrap: string, group: string, topic: string, extra: readonly string[] = []): Kcat {
  const child = spawn('kcat', ['-b', bootstrap, '-G', group, topic, '-q', '-u', '-f', '%p %o\n', '-X', 'auto.offset.reset=earliest', '-X', 'auto.commit.interval.ms=100', ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  let rest = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split('\n');
    rest = parts.pop() ?? '';
    lines.push(...parts);
  });
  child.stderr?.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', (error) => reject(new Error(`could not run kcat (apt-get install kcat): ${error.message}`)));
    child.once('close', (status) => {
      if (status !== 0) process.stderr.write(`kcat exited ${String(status)}: ${stderr}\n`);
      resolve(status);
    });
  });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  return { lines, child, exited };
}

describe('tributary groups --bootstrap-server on a standalone broker', () => {
  // About 12 CLI processes: several seconds each on a loaded 2-core machine.
  it('lists, describes, resets and deletes a kcat -G group', { timeout: 180_000 }, async () => {
    const broker = await startInProcessBroker({ 'group.initial.rebalance.delay.ms': '0' });
    cleanups.push(() => broker.stop());
    const { bootstrap } = broker;
    const admin = new Kafka({ brokers: [bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await admin.createTopics({ topics: [{ topic: 'events', numPartitions: 2 }], waitForLeaders: true });
    const producer = await Producer.connect({ bootstrap: [bootstrap], acks: -1 });
    cleanups.push(() => producer.close());
    const produce = async (count: number): Promise<void> => {
      for (const partition of [0, 1]) await producer.send('events', Array.from({ length: count }, (_, i) => ({ partition, value: Buffer.from(`${partition}-${i}`) })));
    };
    const committed = async (): Promise<string> =>
      ((await admin.fetchOffsets({ groupId: 'reader', topics: ['events'] }))[0]?.partitions ?? [])
        .map((p) => `${p.partition}:${p.offset}`)
        .sort()
        .join(' ');
    await produce(10);

    const running = kcatGroup(bootstrap, 'reader', 'events');
    await waitUntil(async () => running.lines.length === 20 && (await committed()) === '0:10 1:10', { what: 'kcat -G to read and commit 20 records', timeoutMs: 60_000 });

    const [listed, described, refused, both, neither] = await Promise.all([
      tributary('groups', 'list', '--bootstrap-server', bootstrap),
      tributary('groups', 'describe', '--bootstrap-server', bootstrap, '--group', 'reader'),
      tributary('groups', 'reset-offsets', '--bootstrap-server', bootstrap, '--group', 'reader', '--topic', 'events', '--to-earliest'),
      tributary('groups', 'list', '--bootstrap-server', bootstrap, '--zookeeper', '127.0.0.1:2181'),
      tributary('groups', 'describe', '--group', 'reader'),
    ]);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toBe('group   kind    state\nreader  broker  Stable, 1 member\n');
    expect(described.status, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/^group reader: broker-coordinated, state Stable, protocol consumer \(range\), coordinator broker 0 \(127\.0\.0\.1:\d+\), 1 member$/m);
    const member = /^ {2}member (rdkafka-\S+) {2}client rdkafka {2}host \/127\.0\.0\.1 {2}assigned events\[0,1\]$/m.exec(described.stdout);
    expect(member, described.stdout).not.toBeNull();
    expect(described.stdout).toMatch(new RegExp(`^events\\s+0\\s+10\\s+10\\s+0\\s+${member?.[1] ?? '?'}$`, 'm'));
    expect(described.stdout).toMatch(new RegExp(`^events\\s+1\\s+10\\s+10\\s+0\\s+${member?.[1] ?? '?'}$`, 'm'));
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/group reader is in state Stable with 1 live member: rdkafka-\S+ \(client rdkafka, host \/127\.0\.0\.1\); stop its members first \(it must be Empty\), then reset its offsets \[GROUP_ACTIVE\]/);
    for (const wrong of [both, neither]) {
      expect(wrong.status).toBe(1);
      expect(wrong.stderr).toContain('give exactly one');
      expect(wrong.stderr).toContain('[CONFIG_INVALID]');
    }
    expect(both.stderr).toContain('both --zookeeper and --bootstrap-server given');
    expect(neither.stderr).toContain('neither --zookeeper nor --bootstrap-server given');
    expect(await committed()).toBe('0:10 1:10');

    // kcat stops cleanly on SIGTERM (librdkafka commits and leaves the group); 5 more records wait.
    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
    await produce(5);
    const idle = await tributary('groups', 'describe', '--bootstrap-server', bootstrap, '--group', 'reader');
    expect(idle.stdout).toMatch(/^group reader: broker-coordinated, state Empty, protocol consumer, coordinator broker 0 .*, 0 members$/m);
    expect(idle.stdout).toMatch(/^events\s+0\s+10\s+15\s+5\s+-$/m);
    expect(idle.stdout).toMatch(/^events\s+1\s+10\s+15\s+5\s+-$/m);

    const reset = await tributary('groups', 'reset-offsets', '--bootstrap-server', bootstrap, '--group', 'reader', '--topic', 'events', '--to-earliest');
    expect(reset.status, reset.stderr).toBe(0);
    expect(reset.stdout).toBe('events 0 0\nevents 1 0\n');
    expect(await committed()).toBe('0:0 1:0');

    // The group's next member reads from the reset offsets: everything again, to the end (-e).
    const rereading = kcatGroup(bootstrap, 'reader', 'events', ['-e']);
    expect(await rereading.exited).toBe(0);
    expect(rereading.lines.sort()).toEqual([0, 1].flatMap((partition) => Array.from({ length: 15 }, (_, offset) => `${partition} ${offset}`)).sort());

    const deleted = await tributary('groups', 'delete', '--bootstrap-server', bootstrap, '--group', 'reader');
    expect(deleted.status, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe('deleted group reader\n');
    const [gone, empty] = await Promise.all([
      tributary('groups', 'describe', '--bootstrap-server', bootstrap, '--group', 'reader'),
      tributary('groups', 'list', '--bootstrap-server', bootstrap),
    ]);
    expect(gone.status).toBe(1);
    expect(gone.stderr).toContain('consumer group reader does not exist');
    expect(gone.stderr).toContain('[GROUP_ID_NOT_FOUND]');
    expect(empty.stdout).toBe('group  kind  state\n');
  });
});
