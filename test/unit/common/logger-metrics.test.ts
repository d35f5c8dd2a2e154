import { Writable } from 'node:stream';
import { Counter } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { bindOnce, createLogger } from '../../../src/common/logger.js';
import { METRIC_PREFIX, metricsRegistry, renderMetrics } from '../../../src/common/metrics.js';

describe('createLogger', () => {
  it('writes one JSON line per entry with the name, and our error fields', () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').trim().split('\n'));
        done();
      },
    });
    const logger = createLogger({ name: 'storage', level: 'debug', destination });
    const error = new TributaryError({ code: 'CORRUPT_BATCH', message: 'CRC mismatch at 4096', details: { position: 4096 } });
    logger.error({ err: error, partition: 'events-0' }, 'truncating the log at the first bad batch');
    logger.trace('not written below debug');
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    expect(entry).toMatchObject({
      level: 50,
      name: 'storage',
      partition: 'events-0',
      msg: 'truncating the log at the first bad batch',
      err: { code: 'CORRUPT_BATCH', retriable: false, details: { position: 4096 }, message: 'CRC mismatch at 4096' },
    });
    expect(typeof entry['time']).toBe('string');
  });

  it('bindOnce adds only the keys a logger does not carry yet, so no key is written twice', () => {
    const lines: string[] = [];
    const logger = createLogger({ name: 'etl', destination: { write: (line: string) => void lines.push(line) } });
    bindOnce(logger, { load: 'views' }).info({ seq: 1 }, 'unbound');
    bindOnce(logger.child({ load: 'views', attempt: 'a1' }), { load: 'views', seq: 2 }).info('bound');
    expect(lines.map((line) => line.split('"load":').length - 1)).toEqual([1, 1]);
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toMatchObject([
      { load: 'views', seq: 1, msg: 'unbound' },
      { load: 'views', attempt: 'a1', seq: 2, msg: 'bound' },
    ]);
  });
});

describe('metricsRegistry', () => {
  it('is one registry per process, with default metrics and the tributary_ prefix', async () => {
    expect(metricsRegistry()).toBe(metricsRegistry());
    const counter = new Counter({
      name: `${METRIC_PREFIX}test_requests_total`,
      help: 'requests seen by the test',
      registers: [metricsRegistry()],
    });
    counter.inc(3);
    const { contentType, body } = await renderMetrics();
    expect(contentType).toContain('text/plain');
    expect(body).toContain('tributary_test_requests_total 3');
    expect(body).toContain('tributary_process_cpu_seconds_total');
  });
});
