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

/** One stored record as kcat reads it back; headers in kcat's `name=value,…` form. */
export interface StoredRecord {
  readonly offset: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers: string;
}

/**
 * Reads a whole partition with kcat, byte-exact. Keys and values may be binary, so kcat prints
 * their lengths first (−1 for null) on a line with the offset and timestamp, then the raw bytes,
 * then the headers and a newline.
 */
export async function readPartition(bootstrap: string, topic: string, partition: number): Promise<StoredRecord[]> {
  const result = await kcatRaw(['-b', bootstrap, '-C', '-t', topic, '-p', String(partition), '-o', 'beginning', '-e', '-f', '%o %K %S %T\n%k%s%h\n']);
  if (result.status !== 0) throw new Error(`kcat could not read ${topic}-${partition}: ${result.stderr}`);
  const out = result.stdout;
  const stored: StoredRecord[] = [];
  let at = 0;
  const line = (): string => {
    const end = out.indexOf(0x0a, at);
    if (end < 0) throw new Error(`kcat output ends inside a record at byte ${at}`);
    const text = out.subarray(at, end).toString('utf8');
    at = end + 1;
    return text;
  };
  const bytes = (length: number): Buffer | null => {
    if (length < 0) return null;
    const slice = Buffer.from(out.subarray(at, at + length));
    at += length;
    return slice;
  };
  while (at < out.length) {
    const [offset, keyLength, valueLength, timestamp] = line().split(' ').map(Number);
    const key = bytes(keyLength ?? NaN);
    const value = bytes(valueLength ?? NaN);
    stored.push({ offset: offset ?? NaN, key, value, timestamp: timestamp ?? NaN, headers: line() });
  }
  return stored;
}
