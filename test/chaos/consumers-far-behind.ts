/**
 * A consumer far behind (issue #22, "Consumers"): a topic of 4 partitions with 64 KiB segments
 * gets a backlog (400,000 records of ~170 bytes in the full run: over a thousand segments), then a
 * producer keeps writing while a ZooKeeper-group member (group-member.ts) and a kafkajs member,
 * each in a group of its own, start at offset 0. Each must catch up with the head without its
 * memory growing with the backlog, and deliver every acknowledged record exactly once, in order,
 * none skipped (one member per group and no faults: a duplicate or a gap is a bug).
 *
 * Memory: the member's RSS sampled every 200 ms while it catches up (from its first record on);
 * the largest sample of the second half of the catch-up may exceed that of the first half by at
 * most 64 MiB (a consumer
 * that keeps what it read, or reads ahead without bound, grows with the backlog). Peak RSS is the
 * kernel's high-water mark (VmHWM).
 */
import { readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceRun } from '../services/run-dir.js';
import { peakResidentBytes, residentBytes } from '../support/process-memory.js';
import { createTopic, eventually, produceBacklog, produceContinuously, startCluster, startMember, tallyConsumed, type Acknowledged, type Member, type MemberKind } from './consumers-harness.js';

export interface FarBehindOptions {
  readonly run: ServiceRun;
  readonly zookeeperRoot: string;
  readonly backlog: number;
  readonly kinds?: readonly MemberKind[];
  readonly say?: (line: string) => void;
}

export interface FarBehindMember {
  readonly kind: MemberKind;
  readonly catchUpMs: number;
  readonly recordsPerSecond: number;
  readonly peakRssBytes: number;
  readonly firstHalfMaxRssBytes: number;
  readonly secondHalfMaxRssBytes: number;
}

export interface FarBehindResult {
  readonly backlog: number;
  readonly segments: number;
  readonly acknowledged: number;
  readonly lost: number;
  readonly skipped: number;
  readonly outOfOrder: number;
  readonly duplicates: number;
  readonly members: readonly FarBehindMember[];
  readonly peakBrokerRssBytes: number;
  readonly violations: readonly string[];
  readonly seconds: number;
}

const PARTITIONS = 4;
const TOPIC = 'far';
const GROWTH_LIMIT = 64 * 1024 * 1024;

export async function runFarBehind(options: FarBehindOptions): Promise<FarBehindResult> {
  const began = Date.now();
  const say = options.say ?? (() => undefined);
  const kinds = options.kinds ?? (['zookeeper', 'kafkajs'] as const);
  const cluster = await startCluster(options.run, options.zookeeperRoot, 'far-behind');
  const violations: string[] = [];
  const members: Member[] = [];
  const figures: FarBehindMember[] = [];
  let lost = 0;
  let skipped = 0;
  let outOfOrder = 0;
  let duplicates = 0;
  try {
    await createTopic(cluster.broker.bootstrap, TOPIC, PARTITIONS, { 'segment.bytes': '65536' });
    const backlog: Acknowledged = new Map();
    await produceBacklog(cluster.broker.bootstrap, TOPIC, PARTITIONS, options.backlog, 'b', 150, backlog);
    const segments = readdirSync(cluster.broker.dataDir).filter((name) => name.startsWith(`${TOPIC}-`)).reduce((sum, dir) => sum + readdirSync(`${cluster.broker.dataDir}/${dir}`).filter((file) => file.endsWith('.log')).length, 0);
    say(`backlog of ${backlog.size} records in ${segments} segments`);
    const producer = await produceContinuously(cluster.broker.bootstrap, TOPIC, PARTITIONS, { tag: 'live', batch: 20, intervalMs: 50, padding: 150 });
    for (const kind of kinds) {
      const member = startMember({ run: options.run, kind, name: `far-${kind}-${Date.now()}`, zookeeper: cluster.zookeeper, bootstrap: cluster.broker.bootstrap, group: `far-${kind}`, topic: TOPIC, sessionTimeoutMs: 6000 });
      members.push(member);
      const started = Date.now();
      const samples: { at: number; rss: number }[] = [];
      // Caught up: every record acknowledged before it started (the backlog and what came since) delivered.
      const target = new Set([...backlog.keys(), ...producer.acknowledged.keys()]);
      const delivered = new Set<string>();
      let counted = 0;
      let firstDeliveryAt: number | undefined;
      const caughtUp = await eventually(
        () => {
          const at = Date.now();
          samples.push({ at, rss: residentBytes(member.process.pid) });
          const deliveries = member.deliveries();
          // The sample just taken is the reading's first: a catch-up shorter than two samples
          // would otherwise leave the first half without any.
          if (deliveries.length > 0) firstDeliveryAt ??= at;
          for (; counted < deliveries.length; counted += 1) {
            const delivery = deliveries[counted];
            if (delivery !== undefined) delivered.add(`${delivery.partition}/${delivery.offset}`);
          }
          return [...target].every((position) => delivered.has(position)) || member.process.hasExited();
        },
        600_000,
        200,
      );
      const catchUpMs = Date.now() - started;
      if (!caughtUp || member.process.hasExited()) {
        violations.push(`${kind}: did not catch up within 600 s (${delivered.size} of ${target.size} delivered${member.process.hasExited() ? `; exited: ${member.process.stderr().split('\n').slice(-5).join(' | ')}` : ''})`);
        continue;
      }
      // The halves of the reading itself (from the first delivery: the process starting up is not catching up).
      const from = firstDeliveryAt ?? started;
      const middle = from + (Date.now() - from) / 2;
      const reading = samples.filter((sample) => sample.at >= from);
      const firstHalfSamples = reading.filter((sample) => sample.at <= middle).map((sample) => sample.rss);
      const firstHalf = Math.max(0, ...firstHalfSamples);
      const secondHalf = Math.max(0, ...reading.filter((sample) => sample.at > middle).map((sample) => sample.rss));
      if (firstHalfSamples.length === 0) violations.push(`${kind}: no memory sample in the first half of the catch-up (${reading.length} samples in all)`);
      else if (secondHalf > firstHalf + GROWTH_LIMIT) violations.push(`${kind}: RSS grew while catching up: largest ${Math.round(firstHalf / 1048576)} MiB in the first half, ${Math.round(secondHalf / 1048576)} MiB in the second`);
      figures.push({ kind, catchUpMs, recordsPerSecond: (target.size * 1000) / catchUpMs, peakRssBytes: peakResidentBytes(member.process.pid), firstHalfMaxRssBytes: firstHalf, secondHalfMaxRssBytes: secondHalf });
      say(`${kind}: caught up with ${target.size} records in ${catchUpMs} ms, peak RSS ${Math.round(peakResidentBytes(member.process.pid) / 1048576)} MiB`);
    }
    // A little more at the head, then everything must be there.
    await sleep(2000);
    await producer.stop();
    const acknowledged: Acknowledged = new Map([...backlog, ...producer.acknowledged]);
    for (const member of members) {
      await eventually(() => tallyConsumed(acknowledged, member.deliveries()).missing.length === 0 || member.process.hasExited(), 120_000, 250);
      const tally = tallyConsumed(acknowledged, member.deliveries());
      lost += tally.missing.length;
      duplicates += tally.duplicates;
      if (tally.missing.length > 0) violations.push(`${member.kind}: ${tally.missing.length} acknowledged records never delivered, e.g. ${tally.missing.slice(0, 5).join(', ')}`);
      if (tally.duplicates > 0) violations.push(`${member.kind}: ${tally.duplicates} records delivered twice without any fault`);
      violations.push(...tally.wrong.slice(0, 5).map((wrong) => `${member.kind}: ${wrong}`));
      // In order and gapless per partition: 0, 1, 2, … (the log has no holes: one producer, no compaction).
      const next = new Map<number, bigint>();
      for (const delivery of member.deliveries()) {
        const expected = next.get(delivery.partition) ?? 0n;
        if (delivery.offset > expected) {
          skipped += Number(delivery.offset - expected);
          violations.push(`${member.kind}: ${TOPIC}-${delivery.partition} jumped from ${expected} to ${delivery.offset}`);
        } else if (delivery.offset < expected) {
          outOfOrder += 1;
          violations.push(`${member.kind}: ${TOPIC}-${delivery.partition} went back from ${expected - 1n} to ${delivery.offset}`);
        }
        next.set(delivery.partition, delivery.offset + 1n > expected ? delivery.offset + 1n : expected);
      }
    }
    return {
      backlog: backlog.size,
      segments,
      acknowledged: acknowledged.size,
      lost,
      skipped,
      outOfOrder,
      duplicates,
      members: figures,
      peakBrokerRssBytes: cluster.peakRss(),
      violations: violations.slice(0, 50),
      seconds: Math.round((Date.now() - began) / 1000),
    };
  } finally {
    await Promise.all(members.map((member) => member.process.stop(5_000).catch(() => undefined)));
    await cluster.close();
  }
}
