/** A run of a load now, outside its schedule: the same run job a scheduler creates. */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Job, Queue } from 'bullmq';
import { TributaryError } from '../../src/common/errors.js';
import { parseLoadFile } from '../../src/etl/load-file.js';
import type { RunJobData } from './job-data.js';
import { JOB_NAMES, JOB_OPTIONS } from './queues.js';

/** Checks the load file (CONFIG_INVALID when it is not valid: nothing is enqueued) and adds a run job. */
export async function enqueueRun(runs: Queue, file: string, options: { readonly acceptGap?: boolean } = {}): Promise<Job> {
  const loadFile = resolve(file);
  let loadText: string;
  try {
    loadText = await readFile(loadFile, 'utf8');
  } catch (error) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `cannot read load file ${loadFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}. Pass the path of a load YAML file (see jobs/page-views.yaml)`,
      cause: error,
      details: { source: loadFile },
    });
  }
  parseLoadFile(loadText, loadFile);
  const data: RunJobData = { loadFile, loadText, acceptGap: options.acceptGap === true, trigger: 'manual' };
  return runs.add(JOB_NAMES.run, data, JOB_OPTIONS.run);
}
