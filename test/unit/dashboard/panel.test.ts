/** gather: a source's answer, its failure, or its silence, each as the panel shows it. */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { gather, notConfigured } from '../../../src/dashboard/panel.js';

describe('gather', () => {
  it('wraps what the source returned', async () => {
    expect(await gather('the thing', 1_000, async () => 42)).toEqual({ ok: true, data: 42 });
  });

  it('keeps the code and message of a TributaryError, and names the source', async () => {
    const failing = async (): Promise<number> => {
      throw new TributaryError({ code: 'WAREHOUSE_UNAVAILABLE', message: 'the NameNode did not answer' });
    };
    expect(await gather('the warehouse of load x', 1_000, failing)).toEqual({
      ok: false,
      error: { source: 'the warehouse of load x', code: 'WAREHOUSE_UNAVAILABLE', message: 'the NameNode did not answer' },
    });
  });

  it('reports any other error as UNEXPECTED with its message', async () => {
    const failing = async (): Promise<number> => {
      throw new RangeError('bad');
    };
    expect(await gather('s', 1_000, failing)).toEqual({ ok: false, error: { source: 's', code: 'UNEXPECTED', message: 'bad' } });
  });

  it('gives up on a source that does not answer in time, and ignores its late failure', async () => {
    let fail: (error: Error) => void = () => undefined;
    const hanging = new Promise<number>((_resolve, reject) => (fail = reject));
    const panel = await gather('ZooKeeper 127.0.0.1:1', 50, () => hanging);
    expect(panel).toEqual({ ok: false, error: { source: 'ZooKeeper 127.0.0.1:1', code: 'DASHBOARD_TIMEOUT', message: 'ZooKeeper 127.0.0.1:1 did not answer within 0 s' } });
    fail(new Error('too late')); // must not surface as an unhandled rejection
    await new Promise((resolve) => setTimeout(resolve, 10));
  });
});

describe('notConfigured', () => {
  it('says which flag is missing', () => {
    expect(notConfigured('audit counts', 'no --registry')).toEqual({ ok: false, error: { source: 'audit counts', code: 'NOT_CONFIGURED', message: 'no --registry' } });
  });
});
