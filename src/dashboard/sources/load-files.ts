/**
 * The loads the dashboard shows: every `*.yaml`/`*.yml` file of the --loads folder, read again on
 * each request so an edited file shows at once. A file that does not parse is listed with the
 * load-file checker's message instead of hiding the others.
 */
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { TributaryError } from '../../common/errors.js';
import { readLoadFile, type LoadDefinition } from '../../etl/load-file.js';
import { panelError, type PanelError } from '../panel.js';

export interface LoadFiles {
  readonly directory: string;
  readonly loads: readonly LoadDefinition[];
  /** Files that are not valid load files, or a second file declaring a load name already seen. */
  readonly problems: readonly (PanelError & { readonly file: string })[];
}

const LOAD_FILE = /\.ya?ml$/i;

export async function readLoadFiles(directory: string): Promise<LoadFiles> {
  const absolute = resolve(directory);
  let names: string[];
  try {
    names = (await readdir(absolute, { withFileTypes: true })).filter((entry) => entry.isFile() && LOAD_FILE.test(entry.name)).map((entry) => entry.name).sort();
  } catch (error) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `cannot list the load files in ${absolute}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}. Pass --loads with the folder of the load YAML files (e.g. jobs/)`,
      cause: error,
    });
  }
  const loads: LoadDefinition[] = [];
  const problems: (PanelError & { file: string })[] = [];
  for (const name of names) {
    const file = join(absolute, name);
    try {
      const load = await readLoadFile(file);
      const twin = loads.find((other) => other.name === load.name);
      if (twin !== undefined) {
        problems.push({ file, source: 'load files', code: 'CONFIG_INVALID', message: `load file ${file} declares load ${load.name}, as ${twin.file} already does; load names must be unique (they name the warehouse folder _etl/${load.name})` });
      } else {
        loads.push(load);
      }
    } catch (error) {
      problems.push({ file, ...panelError('load files', error) });
    }
  }
  return { directory: absolute, loads, problems };
}
