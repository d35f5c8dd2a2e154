/**
 * The load files of a folder (`*.yaml`, `*.yml`; not its subfolders), each read and checked. A
 * file that is not a valid load file is returned with the checker's message, not thrown: one bad
 * file must not stop the others from being scheduled.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { TributaryError } from '../../src/common/errors.js';
import { parseLoadFile, type LoadDefinition } from '../../src/etl/load-file.js';

export type LoadFileEntry =
  | { readonly file: string; readonly ok: true; readonly load: LoadDefinition; readonly text: string }
  | { readonly file: string; readonly ok: false; readonly message: string };

const LOAD_FILE = /\.ya?ml$/i;

export async function readLoadDirectory(directory: string): Promise<LoadFileEntry[]> {
  const absolute = resolve(directory);
  let names: string[];
  try {
    names = (await readdir(absolute, { withFileTypes: true })).filter((entry) => entry.isFile() && LOAD_FILE.test(entry.name)).map((entry) => entry.name).sort();
  } catch (error) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `cannot list the load files in ${absolute}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}. Pass --loads with the folder of the load YAML files (e.g. jobs/)`,
      cause: error,
      details: { directory: absolute },
    });
  }
  return Promise.all(
    names.map(async (name): Promise<LoadFileEntry> => {
      const file = join(absolute, name);
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (error) {
        // Deleted or renamed between listing and reading: the next pass sees the folder as it is.
        return { file, ok: false, message: `cannot read load file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}` };
      }
      try {
        return { file, ok: true, load: parseLoadFile(text, file), text };
      } catch (error) {
        return { file, ok: false, message: (error as Error).message };
      }
    }),
  );
}
