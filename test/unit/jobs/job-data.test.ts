/** What jobs carry through Redis: accepted as written, refused precisely when it is not. */
import { describe, expect, it } from 'vitest';
import type { RangeResult, RangeTask, RunPlan } from '../../../src/etl/load/phases.js';
import { parseCommitJobData, parseRunJobData, parseTaskJobData, parseTaskJobResult } from '../../../jobs/src/job-data.js';

const sha = 'a'.repeat(64);
const task: RangeTask = {
  load: 'views',
  seq: 3,
  run: '0a1b2c3d4e5f',
  plannedAt: '2026-11-29T17:00:00.000Z',
  partition: { topic: 'views', partition: 2, start: 10, end: 20, logStart: 0, highWatermark: 20, capped: false },
  reader: { subject: 'views-value', version: 2, id: 7 },
};
const plan: RunPlan = {
  load: 'views',
  seq: 3,
  run: '0a1b2c3d4e5f',
  plannedAt: task.plannedAt,
  partitions: [task.partition, { topic: 'views', partition: 3, start: 5, end: 5, logStart: 9, highWatermark: 12, capped: false, problem: 'lost' }],
  readerSchemas: { views: { subject: 'views-value', version: 2, id: 7 } },
};
const result: RangeResult = {
  seq: 3,
  run: '0a1b2c3d4e5f',
  topic: 'views',
  partition: 2,
  start: 10,
  end: 20,
  staged: {
    topic: 'views',
    partition: 2,
    files: [{ topic: 'views', partition: 2, hour: '2026-11-29T13', start: 10, end: 20, records: 9, bytes: 400, sha256: sha, staged: 'wh/_etl/views/staging/x/data/f.avro', path: 'wh/views/f.avro' }],
    quarantine: { topic: 'views', partition: 2, start: 10, end: 20, records: 1, bytes: 80, sha256: sha, staged: 'wh/_etl/views/staging/x/quarantine/q.jsonl', path: 'wh/_etl/views/quarantine/q.jsonl' },
    reasons: { SERDE_NOT_FRAMED: 1 },
  },
};

/** As the value comes back from Redis. */
const throughJson = <T>(value: T): unknown => JSON.parse(JSON.stringify(value));

describe('job data', () => {
  it('reads back what the jobs wrote, through JSON', () => {
    const file = { loadFile: '/jobs/views.yaml', loadText: 'name: views\n' };
    expect(parseRunJobData(throughJson({ ...file, acceptGap: true, trigger: 'manual' }), 'run job')).toEqual({ ...file, acceptGap: true, trigger: 'manual' });
    expect(parseRunJobData(throughJson(file), 'run job')).toEqual({ ...file, acceptGap: false, trigger: 'schedule' });
    expect(parseTaskJobData(throughJson({ ...file, task }), 'task job')).toEqual({ ...file, task });
    expect(parseCommitJobData(throughJson({ ...file, plan }), 'commit job')).toEqual({ ...file, plan });
    expect(parseTaskJobResult(throughJson({ worker: 'w-1', result }), 'task result')).toEqual({ worker: 'w-1', result });
  });

  it('gives a range without quarantine back without one (JSON drops undefined)', () => {
    const clean = { ...result, staged: { ...result.staged, quarantine: undefined } };
    const parsed = parseTaskJobResult(throughJson({ worker: 'w-1', result: clean }), 'task result');
    expect(parsed.result.staged.quarantine).toBeUndefined();
    expect(parsed.result.staged.files).toEqual(result.staged.files);
  });

  it('refuses data it does not know with JOBS_DATA_INVALID, naming the job and each field', () => {
    const bad = { loadFile: '/jobs/views.yaml', loadText: 'x', task: { ...task, partition: { ...task.partition, start: -1 } }, extra: 1 };
    expect(() => parseTaskJobData(bad, 'job 17 (task) of queue tributary-tasks')).toThrow(
      expect.objectContaining({
        code: 'JOBS_DATA_INVALID',
        retriable: false,
        message: expect.stringMatching(/^job 17 \(task\) of queue tributary-tasks is not what this version of Tributary writes: .*task\.partition\.start: .*\(top level\): Unrecognized key: "extra"/) as unknown,
      }),
    );
    expect(() => parseTaskJobResult({ worker: 'w', result: { ...result, staged: { ...result.staged, files: [{ ...result.staged.files[0], sha256: 'no' }] } } }, 'the result of task x')).toThrow(
      expect.objectContaining({ message: expect.stringContaining('result.staged.files.0.sha256: Invalid string') as unknown }),
    );
  });
});
