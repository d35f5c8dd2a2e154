/** The --loads folder: good files become loads; bad and duplicate ones are listed, not fatal. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readLoadFiles } from '../../../src/dashboard/sources/load-files.js';

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

function loadText(name: string): string {
  return [`name: ${name}`, 'source: { bootstrap: [127.0.0.1:9092] }', 'topics: [page-views]', 'registry: http://127.0.0.1:8081', "warehouse: { url: wh, root: '' }", 'format: avro', 'codec: deflate', ''].join('\n');
}

describe('readLoadFiles', () => {
  it('reads *.yaml and *.yml in name order, and lists broken files and second declarations of a name', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'dashboard-loads-'));
    folders.push(folder);
    await writeFile(join(folder, 'a.yaml'), loadText('alpha'));
    await writeFile(join(folder, 'b.yml'), loadText('beta'));
    await writeFile(join(folder, 'c.yaml'), 'name: [unclosed');
    await writeFile(join(folder, 'd.yaml'), loadText('alpha'));
    await writeFile(join(folder, 'notes.txt'), 'not a load file');
    const files = await readLoadFiles(folder);
    expect(files.directory).toBe(folder);
    expect(files.loads.map((load) => load.name)).toEqual(['alpha', 'beta']);
    expect(files.problems.map((problem) => [problem.file, problem.code])).toEqual([
      [join(folder, 'c.yaml'), 'CONFIG_INVALID'],
      [join(folder, 'd.yaml'), 'CONFIG_INVALID'],
    ]);
    expect(files.problems[0]?.message).toContain('is not valid YAML');
    expect(files.problems[1]?.message).toBe(`load file ${join(folder, 'd.yaml')} declares load alpha, as ${join(folder, 'a.yaml')} already does; load names must be unique (they name the warehouse folder _etl/alpha)`);
  });

  it('fails with CONFIG_INVALID naming the folder when it cannot be listed', async () => {
    await expect(readLoadFiles('/nonexistent/loads')).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('cannot list the load files in /nonexistent/loads: ENOENT') as unknown });
  });
});
