/**
 * `docker compose config` on docker/compose.yaml: Compose's own validation of the file (schema,
 * interpolation, anchors and merges) and its resolved form. No container engine is needed for it.
 * Compose v2 (`docker compose`) is used where installed, else the standalone `docker-compose`
 * (Debian bookworm's package is 1.29, which validates against the Compose specification). CI
 * installs the latter, and so does the README's list of test prerequisites: a missing binary
 * fails the test with the package to install.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';

const dockerDir = join(import.meta.dirname, '..', '..', '..', 'docker');

function composeCommand(): readonly string[] | undefined {
  if (spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0) return ['docker', 'compose'];
  if (spawnSync('docker-compose', ['version'], { encoding: 'utf8' }).status === 0) return ['docker-compose'];
  return undefined;
}

const compose = composeCommand();

describe('docker/compose.yaml', () => {
  it(`passes ${compose?.join(' ') ?? 'docker compose'} config`, () => {
    if (compose === undefined) expect.fail('neither `docker compose` nor `docker-compose` is installed; on Debian: apt-get install docker-compose');
    const [command, ...prefix] = compose;
    const result = spawnSync(command ?? 'docker', [...prefix, '--file', join(dockerDir, 'compose.yaml'), 'config'], { cwd: dockerDir, encoding: 'utf8', timeout: 120_000 });
    expect(result.status, result.stderr).toBe(0);
    const resolved = parseYaml(result.stdout) as { services: Record<string, { image?: string; build?: { context: string }; depends_on?: Record<string, { condition: string }> }> };
    expect(Object.keys(resolved.services)).toHaveLength(11);
    // Anchors merged and paths made absolute: every Tributary service builds from the repository root.
    const built = Object.entries(resolved.services).filter(([, service]) => service.build !== undefined);
    expect(built.map(([name]) => name).sort()).toEqual(['dashboard', 'offline-broker', 'online-broker-1', 'online-broker-2', 'registry', 'scheduler', 'worker']);
    for (const [, service] of built) expect(service.build?.context).toBe(join(dockerDir, '..'));
    expect(resolved.services['worker']?.depends_on?.['datanode']).toEqual({ condition: 'service_healthy' });
  });
});
