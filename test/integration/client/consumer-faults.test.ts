/**
 * The short versions of `npm run chaos -- consumers` (test/chaos/consumers*.ts), run side by side
 * to keep the wall time down, each with its own broker process and ZooKeeper chroot:
 *
 * - a member of a ZooKeeper-coordinated group, and a kafkajs member of a broker-coordinated one,
 *   SIGKILLed while the group rebalances for a joining member: afterwards every partition is owned
 *   by exactly one live member, committed offsets never went back nor past the log end, every
 *   acknowledged record was consumed, duplicates within the kill's uncommitted window;
 * - a ZooKeeper-group member starting at offset 0 of a topic of many segments while a producer
 *   writes: every record once, in order, none skipped, no memory growth while catching up;
 * - groups whose committed offset retention deleted: the ZooKeeper consumer with smallest resets
 *   and says so, with none fails naming topic, partition, offset and log start; kcat with
 *   earliest resets and says so (before the Fetch fix it heard nothing: librdkafka rejected the
 *   response's null record set).
 */
import { describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { runFarBehind } from '../../chaos/consumers-far-behind.js';
import { runMemberKills } from '../../chaos/consumers-kills.js';
import { runOffRetention } from '../../chaos/consumers-off-retention.js';
import { seededRandom } from '../../support/seeded-random.js';
import { services, zookeeperAddress } from '../services.js';

describe('consumer faults (short chaos run)', () => {
  it('survives member kills in rebalances of both kinds of group, a far-behind consumer, and offsets fallen off retention', async () => {
    const run = openRun(services().runDir);
    const zookeeperRoot = zookeeperAddress().connectString;
    const seed = Date.now() % 1_000_000;
    const lines: string[] = [];
    const say = (tag: string) => (line: string) => lines.push(`${tag} ${line}`);
    const [zookeeperKills, brokerKills, farBehind, offRetention] = await Promise.all([
      runMemberKills({ run, zookeeperRoot, kind: 'zookeeper', kills: 1, random: seededRandom(seed), say: say('zookeeper-kill') }),
      runMemberKills({ run, zookeeperRoot, kind: 'kafkajs', kills: 1, random: seededRandom(seed + 1), say: say('broker-kill') }),
      runFarBehind({ run, zookeeperRoot, backlog: 8000, kinds: ['zookeeper'], say: say('far-behind') }),
      runOffRetention({ run, zookeeperRoot, cases: ['zookeeper-smallest', 'zookeeper-none', 'kcat-earliest'], say: say('off-retention') }),
    ]);
    const context = `seed ${seed}\n${lines.join('\n')}`;
    for (const kills of [zookeeperKills, brokerKills]) {
      expect(kills.violations, context).toEqual([]);
      expect(kills.kills, context).toBe(1);
      expect(kills.lost, context).toBe(0);
      expect(kills.duplicates, context).toBeLessThanOrEqual(kills.duplicateBound);
      expect(kills.acknowledged, context).toBeGreaterThan(0);
    }
    expect(farBehind.violations, context).toEqual([]);
    expect([farBehind.lost, farBehind.skipped, farBehind.outOfOrder, farBehind.duplicates], context).toEqual([0, 0, 0, 0]);
    expect(farBehind.segments, context).toBeGreaterThan(10);
    expect(offRetention.violations, context).toEqual([]);
    expect(offRetention.cases.map((entry) => [entry.name, entry.ok]), context).toEqual([
      ['zookeeper-smallest', true],
      ['zookeeper-none', true],
      ['kcat-earliest', true],
    ]);
    console.log(context);
  }, 240_000);
});
