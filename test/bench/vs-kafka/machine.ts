/** The machine a run happened on, for the report: CPUs, memory, the brokers' disk, versions, load. */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { cpus, loadavg, release, type } from 'node:os';
import { basename } from 'node:path';
import { javaCommand } from '../../services/java.js';
import type { CheckoutDescription, MachineDescription } from './results.js';

/** The first line of what a command printed (stdout, else stderr) that matches `pattern`. */
function versionLine(command: string, args: readonly string[], pattern: RegExp): string {
  const result = spawnSync(command, [...args], { encoding: 'utf8' });
  if (result.error !== undefined) return `(${command} not found)`;
  const lines = `${result.stdout}\n${result.stderr}`.split('\n').map((line) => line.trim());
  return lines.find((line) => pattern.test(line)) ?? lines.find((line) => line !== '') ?? '?';
}

function describeDisk(path: string): string {
  try {
    const mounts = readFileSync('/proc/mounts', 'utf8').split('\n').map((line) => line.split(' ')).filter((f) => f.length >= 3);
    const mount = mounts.filter(([, point]) => point !== undefined && (path === point || path.startsWith(point.endsWith('/') ? point : `${point}/`)))
      .sort((a, b) => (b[1]?.length ?? 0) - (a[1]?.length ?? 0))[0];
    const stats = statfsSync(path);
    const sizeGB = (stats.blocks * stats.bsize) / 1e9;
    const freeGB = (stats.bavail * stats.bsize) / 1e9;
    const device = mount?.[0] ?? '?';
    const block = basename(device).replace(/p?\d+$/, '');
    const rotationalFile = `/sys/block/${block}/queue/rotational`;
    const kind = existsSync(rotationalFile) ? `${rotationalFile}=${readFileSync(rotationalFile, 'utf8').trim()}` : 'kind unknown';
    return `${device} (${mount?.[2] ?? '?'} on ${mount?.[1] ?? '?'}), ${kind}, ${sizeGB.toFixed(0)} GB, ${freeGB.toFixed(0)} GB free at start`;
  } catch (error) {
    return `(could not describe the disk of ${path}: ${(error as Error).message})`;
  }
}

function memoryGiB(): number {
  try {
    const kib = Number(/MemTotal:\s+(\d+) kB/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1]);
    return Math.round((kib / 1024 / 1024) * 10) / 10;
  } catch {
    return NaN;
  }
}

export function describeMachine(dataPath: string): MachineDescription {
  const list = cpus();
  return {
    cpuModel: list[0]?.model ?? '?',
    cpus: list.length,
    cpuMHz: list[0]?.speed ?? 0,
    memoryGiB: memoryGiB(),
    os: `${type()} ${release()}`,
    disk: describeDisk(dataPath),
    node: process.version,
    java: versionLine(javaCommand(), ['-version'], /version/),
    kcat: versionLine('kcat', ['-V'], /^Version/),
    loadAtStart: loadavg().map((n) => Math.round(n * 100) / 100),
  };
}

/** Which commit of which folder the Tributary broker ran from, and whether tracked files differed from it. */
export function describeCheckout(dir: string): CheckoutDescription {
  const git = (...args: string[]): string => {
    const result = spawnSync('git', ['-C', dir, ...args], { encoding: 'utf8' });
    return result.status === 0 ? result.stdout.trim() : '';
  };
  const commit = git('rev-parse', 'HEAD');
  return {
    dir,
    commit: commit === '' ? '(not a git checkout)' : commit,
    subject: git('log', '-1', '--format=%s'),
    modified: git('status', '--porcelain', '--untracked-files=no') !== '',
  };
}

export function currentLoad(): number[] {
  return loadavg().map((n) => Math.round(n * 100) / 100);
}

let clockTicksPerSecond: number | undefined;

/**
 * CPU time (user + system, seconds) a process has used so far, from /proc/<pid>/stat; NaN when it
 * cannot be read. The difference over a measurement says what the broker spent, beside the client
 * it shares the 2 cores with.
 */
export function processCpuSeconds(pid: number): number {
  try {
    clockTicksPerSecond ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces, hence the last ')'): state is the 3rd
    // field of the line, utime the 14th and stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond;
  } catch {
    return NaN;
  }
}
