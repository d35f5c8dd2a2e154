/** Runs the `tributary` command as a user would (`bin/tributary.js` in a child process). */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const bin = join(import.meta.dirname, '..', '..', 'bin', 'tributary.js');

export interface CommandResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Both streams, in the order they were read. */
  readonly output: string;
}

export function runTributary(args: readonly string[], input = ''): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args]);
    let stdout = '';
    let stderr = '';
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      output += chunk.toString();
    });
    child.once('close', (status) => resolve({ status, stdout, stderr, output }));
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}
