// Watchdog of one service run: `node guardian.mjs <ownerPid> <runDir>`.
// Plain JavaScript so it starts in milliseconds without a TypeScript loader.
// While the owner lives it only watches. When the owner dies without cleaning up (a test run
// killed by SIGKILL or Ctrl-C before teardown), it stops every process group listed in
// <runDir>/pids/*.pid — SIGTERM, then SIGKILL after a grace period — and deletes <runDir>.
// When <runDir> disappears, the owner cleaned up itself and the guardian exits.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const ownerPid = Number(process.argv[2]);
const runDir = process.argv[3];
if (!Number.isInteger(ownerPid) || ownerPid <= 0 || !runDir) {
  process.stderr.write('usage: node guardian.mjs <ownerPid> <runDir>\n');
  process.exit(64);
}
const pidDir = join(runDir, 'pids');
const GRACE_MS = 8000;

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

function recordedGroups() {
  try {
    return readdirSync(pidDir)
      .filter((file) => file.endsWith('.pid'))
      .map((file) => Number(readFileSync(join(pidDir, file), 'utf8').trim()))
      .filter((pid) => Number.isInteger(pid) && pid > 0);
  } catch {
    return [];
  }
}

function signalGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

async function cleanUp() {
  const groups = recordedGroups();
  for (const pid of groups) signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + GRACE_MS;
  while (groups.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  for (const pid of groups) signalGroup(pid, 'SIGKILL');
  rmSync(runDir, { recursive: true, force: true });
  process.exit(0);
}

const timer = setInterval(() => {
  if (!existsSync(runDir)) process.exit(0);
  if (!alive(ownerPid)) {
    clearInterval(timer);
    void cleanUp();
  }
}, 500);
