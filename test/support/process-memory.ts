/**
 * A process's resident memory from /proc (Linux), for fault runs that report peak RSS: the
 * kernel's own high-water mark (VmHWM), which a run resets before each phase (writing 5 to
 * /proc/<pid>/clear_refs) so that each phase reports its own peak.
 */
import { readFileSync, writeFileSync } from 'node:fs';

function statusField(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const kilobytes = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kilobytes === undefined ? 0 : Number(kilobytes) * 1024;
  } catch {
    return 0; // the process is gone
  }
}

/** Resident bytes now (0 once the process is gone). */
export function residentBytes(pid: number | undefined): number {
  return pid === undefined ? 0 : statusField(pid, 'VmRSS');
}

/** The most resident bytes since the process started or since `resetPeakResident`. */
export function peakResidentBytes(pid: number | undefined): number {
  return pid === undefined ? 0 : statusField(pid, 'VmHWM');
}

/** Starts a new peak at the current RSS; false where the kernel does not allow it (the peak then covers the whole life). */
export function resetPeakResident(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
