/**
 * `tributary produce`: sends standard input to a topic, one record per line; with
 * --key-separator S, `key S value`. Exits once every record is acknowledged.
 */
import { createInterface } from 'node:readline';
import { TributaryError } from '../../common/errors.js';
import { Producer } from '../../client/producer.js';
import type { CompressionName } from '../../protocol/record-batch.js';
import { securityOption } from '../../client/security-config.js';
import { commandSecurity } from '../command-security.js';
import type { CommandIo } from '../not-implemented.js';

export interface ProduceOptions {
  readonly bootstrapServer: string;
  readonly topic: string;
  readonly keySeparator?: string;
  readonly acks: string;
  readonly compression: string;
  readonly commandConfig?: string;
}

const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

export async function produce(io: CommandIo, options: ProduceOptions, input: NodeJS.ReadableStream): Promise<void> {
  const acks = Number(options.acks);
  if (acks !== -1 && acks !== 0 && acks !== 1) throw new TributaryError({ code: 'CONFIG_INVALID', message: `--acks must be -1, 0 or 1, not ${options.acks}` });
  if (!CODECS.includes(options.compression)) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `--compression must be one of ${CODECS.join(', ')}, not ${options.compression}` });
  }
  const producer = await Producer.connect({
    bootstrap: options.bootstrapServer.split(','),
    clientId: 'tributary-produce',
    acks,
    compression: options.compression as CompressionName,
    ...securityOption(commandSecurity(options.commandConfig)),
  });
  const pending: Promise<unknown>[] = [];
  let lines = 0;
  try {
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      const separator = options.keySeparator === undefined ? -1 : line.indexOf(options.keySeparator);
      const record =
        separator < 0
          ? { key: null, value: Buffer.from(line) }
          : { key: Buffer.from(line.slice(0, separator)), value: Buffer.from(line.slice(separator + (options.keySeparator?.length ?? 0))) };
      pending.push(producer.send(options.topic, [record]));
      lines += 1;
      // Bounded memory for endless input: wait for what is in flight now and then.
      if (pending.length >= 10_000) await Promise.all(pending.splice(0));
    }
    await Promise.all(pending);
  } finally {
    await producer.close();
  }
  io.writeErr(`produced ${lines} records to ${options.topic}\n`);
}
