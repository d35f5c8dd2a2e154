/**
 * `tributary demo`: the whole pipeline in one process (src/demo/demo.ts). Progress goes to
 * stderr, the result (hour folders, audit report) to stdout. The folder is kept afterwards so the
 * files can be looked at; with --keep-running the broker and the registry stay up until SIGINT
 * or SIGTERM. Exits 1 if any audit window of the LOADER tier is not at 100%.
 */
import { mkdir, mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { logLevelSchema, parseConfig } from '../../common/config.js';
import { TributaryError } from '../../common/errors.js';
import { createLogger } from '../../common/logger.js';
import { DEFAULT_DEMO_EVENTS } from '../command-constants.js';
import type { CommandIo } from '../not-implemented.js';

export interface DemoCommandOptions {
  readonly dir?: string;
  readonly events?: string;
  readonly keepRunning?: boolean;
  readonly logLevel?: string;
  readonly format?: string;
}

const MAX_EVENTS = 1_000_000;

export async function demo(io: CommandIo, options: DemoCommandOptions): Promise<void> {
  const began = performance.now();
  // Loaded here, so other commands don't pay for the registry server (fastify) at start-up.
  const { auditShortfalls, DEMO_FORMATS, DEMO_TOPIC, runDemo } = await import('../../demo/demo.js');
  const { formatDemoSummary } = await import('../../demo/summary.js');
  const events = parseEvents(options.events);
  const format = DEMO_FORMATS.find((known) => known === (options.format ?? 'avro'));
  if (format === undefined) throw new TributaryError({ code: 'CONFIG_INVALID', message: `--format must be one of ${DEMO_FORMATS.join(', ')}, not "${options.format ?? ''}"` });
  const logger = createLogger({ name: 'demo', level: parseConfig(logLevelSchema, options.logLevel ?? 'warn', '--log-level') });
  const dir = await prepareDir(options.dir);
  const progress = (line: string): void => io.writeErr(`[demo ${((performance.now() - began) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);
  progress(`working in ${dir} (kept afterwards)`);

  const result = await runDemo({ dir, events, logger, progress, format });
  let stopped = false;
  try {
    io.writeOut(formatDemoSummary(result));
    const shortfalls = auditShortfalls(result.reconciliation);
    if (shortfalls.length > 0) {
      throw new TributaryError({
        code: 'DEMO_AUDIT_INCOMPLETE',
        message: `the audit does not show every record loaded exactly once: ${shortfalls.join('; ')}. Look at ${dir} and the report above`,
        details: { shortfalls },
      });
    }
    progress(`done: every window 100.00% at the LOADER tier. Look around: npx tributary etl status --load ${result.loadFile}`);
    if (options.keepRunning === true) {
      const { from, to } = result.hours;
      io.writeOut(
        [
          '',
          `broker   ${result.stack.bootstrap}`,
          `registry ${result.stack.registryUrl}`,
          `try      npx tributary audit report --bootstrap-server ${result.stack.bootstrap} --registry ${result.stack.registryUrl} --topic ${DEMO_TOPIC} --from ${new Date(from).toISOString()} --to ${new Date(to).toISOString()}`,
          `         npx tributary consume --bootstrap-server ${result.stack.bootstrap} --topic ${DEMO_TOPIC} --from-beginning --max-messages 5`,
          'running until Ctrl-C (SIGINT) or SIGTERM',
          '',
        ].join('\n'),
      );
      await untilSignal();
      progress('signal received; stopping');
    }
    await result.stack.stop();
    stopped = true;
    progress(`stopped cleanly after ${((performance.now() - began) / 1000).toFixed(1)} s`);
  } finally {
    if (!stopped) await result.stack.stop().catch((error: unknown) => logger.error({ err: error }, 'the demo stack did not stop cleanly'));
  }
}

function parseEvents(text: string | undefined): number {
  if (text === undefined) return DEFAULT_DEMO_EVENTS;
  const events = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(events) || events < 1 || events > MAX_EVENTS) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `--events must be a whole number from 1 to ${MAX_EVENTS}, not "${text}"` });
  }
  return events;
}

/** A fresh temp folder, or the given one if it is missing or empty: the demo starts from nothing. */
async function prepareDir(dir: string | undefined): Promise<string> {
  if (dir === undefined) return mkdtemp(join(tmpdir(), 'tributary-demo-'));
  const path = resolve(dir);
  let entries: string[];
  try {
    entries = await readdir(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') throw new TributaryError({ code: 'CONFIG_INVALID', message: `--dir ${path} cannot be read (${code ?? (error as Error).message})`, cause: error });
    await mkdir(path, { recursive: true });
    return path;
  }
  if (entries.length > 0) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `--dir ${path} is not empty (it holds ${entries.slice(0, 3).join(', ')}${entries.length > 3 ? ', …' : ''}); the demo starts from nothing: give a new or empty folder, or leave --dir out for a fresh temporary one`,
    });
  }
  return path;
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
