/**
 * `tributary consume`: prints records of a topic, one per line (`key<sep>value` with
 * --print-key). Without a group it reads partitions directly with the simple consumer, from the
 * end (default), the beginning (--from-beginning) or an offset (--partition P --offset O), and
 * keeps waiting for new records until --max-messages is reached or it is interrupted. With
 * --group and --zookeeper it joins a ZooKeeper consumer group and reads what the group assigns it.
 */
import { TributaryError } from '../../common/errors.js';
import { ClusterClient } from '../../client/cluster-client.js';
import { ZooKeeperConsumer } from '../../client/group/zookeeper-consumer.js';
import { SimpleConsumer } from '../../client/simple-consumer.js';
import { securityOption } from '../../client/security-config.js';
import { commandSecurity } from '../command-security.js';
import type { CommandIo } from '../not-implemented.js';

export interface ConsumeOptions {
  readonly bootstrapServer: string;
  readonly topic: string;
  readonly group?: string;
  readonly zookeeper?: string;
  readonly fromBeginning?: boolean;
  readonly partition?: string;
  readonly offset?: string;
  readonly maxMessages?: string;
  readonly printKey?: boolean;
  readonly keySeparator: string;
  readonly commandConfig?: string;
}

export async function consume(io: CommandIo, options: ConsumeOptions, signal: AbortSignal): Promise<void> {
  const limit = options.maxMessages === undefined ? Infinity : Number(options.maxMessages);
  if (!(limit > 0)) throw new TributaryError({ code: 'CONFIG_INVALID', message: `--max-messages must be a positive number, not ${options.maxMessages}` });
  if (options.group !== undefined || options.zookeeper !== undefined) {
    if (options.group === undefined || options.zookeeper === undefined) {
      throw new TributaryError({ code: 'CONFIG_INVALID', message: 'a group consumer needs both --group and --zookeeper' });
    }
    if (options.partition !== undefined || options.offset !== undefined) {
      throw new TributaryError({ code: 'CONFIG_INVALID', message: '--partition/--offset read without a group; a group member gets its partitions from the group' });
    }
    await consumeInGroup(io, { ...options, group: options.group, zookeeper: options.zookeeper }, limit, signal);
    return;
  }
  if (options.offset !== undefined && options.partition === undefined) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: '--offset needs --partition: an offset belongs to one partition' });
  }
  const cluster = await ClusterClient.connect({ bootstrap: options.bootstrapServer.split(','), clientId: 'tributary-consume', ...securityOption(commandSecurity(options.commandConfig)) });
  try {
    const consumer = new SimpleConsumer(cluster);
    const partitions = options.partition === undefined ? await cluster.partitionsFor(options.topic) : [Number(options.partition)];
    const positions = new Map<number, bigint>();
    for (const partition of partitions) {
      const start =
        options.offset !== undefined
          ? parseOffset(options.offset)
          : await consumer.listOffset(options.topic, partition, options.fromBeginning === true ? 'earliest' : 'latest');
      positions.set(partition, start === 'earliest' || start === 'latest' ? await consumer.listOffset(options.topic, partition, start) : start);
    }
    let printed = 0;
    while (printed < limit && !signal.aborted) {
      let gotAny = false;
      for (const partition of partitions) {
        const offset = positions.get(partition) ?? 0n;
        // Long-poll only when there is a single partition to wait on; otherwise poll each in turn.
        const result = await consumer.fetch(options.topic, partition, offset, { maxWaitMs: partitions.length === 1 ? 500 : 0, maxBytes: 1024 * 1024 });
        for (const record of result.records) {
          if (printed >= limit) break;
          const value = record.value?.toString('utf8') ?? '';
          io.writeOut(options.printKey === true ? `${record.key?.toString('utf8') ?? ''}${options.keySeparator}${value}\n` : `${value}\n`);
          printed += 1;
          positions.set(partition, record.offset + 1n);
        }
        if (result.records.length > 0) gotAny = true;
        else positions.set(partition, result.nextOffset);
      }
      if (!gotAny && partitions.length > 1) await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    cluster.close();
  }
}

function parseOffset(value: string): bigint | 'earliest' | 'latest' {
  if (value === 'earliest' || value === 'latest') return value;
  if (!/^\d+$/.test(value)) throw new TributaryError({ code: 'CONFIG_INVALID', message: `--offset must be a number, earliest or latest, not "${value}"` });
  return BigInt(value);
}

/** One member of a ZooKeeper consumer group with one stream; commits what it printed on the way out. */
async function consumeInGroup(io: CommandIo, options: ConsumeOptions & { group: string; zookeeper: string }, limit: number, signal: AbortSignal): Promise<void> {
  const consumer = await ZooKeeperConsumer.connect({
    zookeeper: options.zookeeper,
    bootstrap: options.bootstrapServer.split(','),
    ...securityOption(commandSecurity(options.commandConfig)),
    group: options.group,
    autoOffsetReset: options.fromBeginning === true ? 'smallest' : 'largest',
  });
  try {
    const streams = await consumer.createMessageStreams({ [options.topic]: 1 });
    const stream = streams[options.topic]?.[0];
    if (stream === undefined) throw new TributaryError({ code: 'PROTOCOL_ERROR', message: 'the group consumer returned no stream' });
    const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    let printed = 0;
    const iterator = stream[Symbol.asyncIterator]();
    while (printed < limit && !signal.aborted) {
      const next = await Promise.race([iterator.next(), aborted.then(() => undefined)]);
      if (next === undefined || next.done === true) break;
      const message = next.value;
      const value = message.value?.toString('utf8') ?? '';
      io.writeOut(options.printKey === true ? `${message.key?.toString('utf8') ?? ''}${options.keySeparator}${value}\n` : `${value}\n`);
      printed += 1;
    }
  } finally {
    await consumer.close();
  }
}
