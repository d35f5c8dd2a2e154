/** The `tributary produce` and `tributary consume` tools against a broker, checked with kcat. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { runTributary as tributary } from '../support/cli.js';
import { kcat } from '../support/kcat.js';


let broker: InProcessBroker;
beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '1' });
});
afterAll(async () => {
  await broker.stop();
});

describe('tributary produce and consume', () => {
  it('produces keyed lines that kcat reads back, and consumes them from the beginning', async () => {
    const lines = Array.from({ length: 200 }, (_, i) => `key-${i}|value ${i} ü`);
    const produced = await tributary(['produce', '--bootstrap-server', broker.bootstrap, '--topic', 'lines', '--key-separator', '|', '--compression', 'gzip'], `${lines.join('\n')}\n`);
    expect(produced.status, produced.stderr).toBe(0);
    expect(produced.stderr).toContain('produced 200 records to lines');

    const read = await kcat(['-b', broker.bootstrap, '-C', '-t', 'lines', '-p', '0', '-o', 'beginning', '-e', '-f', '%k|%s\n']);
    expect(read.stdout.trimEnd().split('\n')).toEqual(lines);

    const consumed = await tributary(['consume', '--bootstrap-server', broker.bootstrap, '--topic', 'lines', '--from-beginning', '--max-messages', '200', '--print-key', '--key-separator', '|']);
    expect(consumed.status, consumed.stderr).toBe(0);
    expect(consumed.stdout.trimEnd().split('\n')).toEqual(lines);
  });

  it('consumes one partition from an offset, including what kcat compressed with lz4', async () => {
    const sent = await kcat(['-b', broker.bootstrap, '-P', '-t', 'from-kcat', '-p', '0', '-z', 'lz4'], Array.from({ length: 50 }, (_, i) => `m${i}\n`).join(''));
    expect(sent.status, sent.stderr).toBe(0);
    const consumed = await tributary(['consume', '--bootstrap-server', broker.bootstrap, '--topic', 'from-kcat', '--partition', '0', '--offset', '45', '--max-messages', '5']);
    expect(consumed.status, consumed.stderr).toBe(0);
    expect(consumed.stdout.trimEnd().split('\n')).toEqual(['m45', 'm46', 'm47', 'm48', 'm49']);
  });

  it('refuses --group without --zookeeper with a clear message (status 1)', async () => {
    const result = await tributary(['consume', '--bootstrap-server', broker.bootstrap, '--topic', 'lines', '--group', 'g']);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('a group consumer needs both --group and --zookeeper');
  });
});
