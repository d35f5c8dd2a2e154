/**
 * `tributary registry start` as a real OS process for the fuzz runs: on a file store in its own
 * folder, its log kept in a file, its URL read from the first line it prints.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../bin/tributary.js', import.meta.url));

export interface RegistryProcess {
  readonly url: string;
  readonly pid: number;
  readonly logFile: string;
  hasExited(): boolean;
  /** SIGTERM, then the exit code (SIGKILL after 10 s). */
  stop(): Promise<number | null>;
}

export function startRegistryProcess(folder: string, args: readonly string[] = []): Promise<RegistryProcess> {
  mkdirSync(folder, { recursive: true });
  const logFile = join(folder, 'registry.log');
  const log = createWriteStream(logFile);
  const child: ChildProcess = spawn(process.execPath, [bin, 'registry', 'start', '--listen', '127.0.0.1:0', '--data-dir', join(folder, 'registry'), '--log-level', 'warn', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr?.pipe(log);
  let exited = false;
  const exit = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      exited = true;
      resolve(code);
    }),
  );
  return new Promise((resolve, reject) => {
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const newline = stdout.indexOf('\n');
      if (newline < 0) return;
      resolve({
        url: stdout.slice(0, newline).trim(),
        pid: child.pid ?? 0,
        logFile,
        hasExited: () => exited,
        stop: async () => {
          if (!exited) child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          const code = await exit;
          clearTimeout(timer);
          return code;
        },
      });
    });
    void exit.then((code) => reject(new Error(`the registry exited (${code}) before printing its URL; see ${logFile}`)));
  });
}
