/** Runs Debian's kcat (librdkafka 2.0.2), the reference C client, and collects what it printed. */
import { spawn } from 'node:child_process';

export interface KcatResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface KcatRawResult {
  readonly status: number | null;
  /** Bytes as printed: keys and values may be binary. */
  readonly stdout: Buffer;
  readonly stderr: string;
}

export function kcatRaw(args: readonly string[], input?: string | Buffer, timeoutMs = 60_000): Promise<KcatRawResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('kcat', [...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`kcat ${args.join(' ')} did not finish in ${timeoutMs} ms; stderr: ${Buffer.concat(stderr).toString()}`));
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`could not run kcat (apt-get install kcat): ${error.message}`));
    });
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString('utf8') });
    });
    child.stdin.on('error', () => {}); // kcat may exit before reading all its input
    child.stdin.end(input ?? '');
  });
}

export async function kcat(args: readonly string[], input?: string | Buffer, timeoutMs = 60_000): Promise<KcatResult> {
  const result = await kcatRaw(args, input, timeoutMs);
  return { ...result, stdout: result.stdout.toString('utf8') };
}
