/**
 * Starts a worker thread on one of our TypeScript modules. The module is bundled into plain
 * JavaScript by esbuild (packages stay imports) and written once under
 * node_modules/.cache/tributary/: a thread that loaded TypeScript through tsx would carry tsx's
 * loader and its hooks thread, some 80 MB more memory. Where that file cannot be written, the
 * thread loads the TypeScript through tsx as bin/tributary.js does.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { buildSync } from 'esbuild';

/** A worker thread running the module at `source` (a .ts file of this project). */
export function startModuleWorker(source: URL, options: WorkerOptions): Worker {
  const bundled = bundledModule(source);
  return bundled === undefined ? new Worker(tsxBootstrap(source), { ...options, eval: true }) : new Worker(bundled, options);
}

/** The module bundled to JavaScript, as a file under node_modules/.cache (undefined: could not). */
function bundledModule(source: URL): URL | undefined {
  try {
    const built = buildSync({ entryPoints: [fileURLToPath(source)], bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', write: false, logLevel: 'silent' });
    const code = built.outputFiles[0]?.text;
    if (code === undefined) return undefined;
    // Beside the packages it imports, so they resolve as from the sources.
    const cache = join(dirname(dirname(dirname(createRequire(import.meta.url).resolve('esbuild')))), '.cache', 'tributary');
    const name = basename(fileURLToPath(source)).replace(/\.ts$/, '');
    const file = join(cache, `${name}-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`);
    if (!existsSync(file)) {
      mkdirSync(cache, { recursive: true });
      const temporary = `${file}.${process.pid}.tmp`;
      writeFileSync(temporary, code);
      renameSync(temporary, file);
    }
    return pathToFileURL(file);
  } catch {
    return undefined;
  }
}

/** Registers tsx's loader in the thread, then loads the module (TypeScript). */
function tsxBootstrap(source: URL): string {
  const tsx = pathToFileURL(join(dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist', 'esm', 'api', 'index.mjs')).href;
  return `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(source.href)}); })`;
}
