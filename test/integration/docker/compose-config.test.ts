/**
 * `docker compose config` on docker/compose.yaml and docker/compose.secure.yaml: Compose's own validation of the file (schema,
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

/** The file as `config` resolves it; fails the test when Compose refuses it. */
function resolvedConfig(file: string): { services: Record<string, { image?: string; build?: { context: string }; depends_on?: Record<string, { condition: string }>; command?: string[]; volumes?: unknown[] }> } {
  if (compose === undefined) expect.fail('neither `docker compose` nor `docker-compose` is installed; on Debian: apt-get install docker-compose');
  const [command, ...prefix] = compose;
  const result = spawnSync(command ?? 'docker', [...prefix, '--file', join(dockerDir, file), 'config'], { cwd: dockerDir, encoding: 'utf8', timeout: 120_000 });
  expect(result.status, result.stderr).toBe(0);
  return parseYaml(result.stdout) as ReturnType<typeof resolvedConfig>;
}

describe('docker/compose.yaml', () => {
  it(`passes ${compose?.join(' ') ?? 'docker compose'} config`, () => {
    const resolved = resolvedConfig('compose.yaml');
    expect(Object.keys(resolved.services)).toHaveLength(11);
    // Anchors merged and paths made absolute: every Tributary service builds from the repository root.
    const built = Object.entries(resolved.services).filter(([, service]) => service.build !== undefined);
    expect(built.map(([name]) => name).sort()).toEqual(['dashboard', 'offline-broker', 'online-broker-1', 'online-broker-2', 'registry', 'scheduler', 'worker']);
    for (const [, service] of built) expect(service.build?.context).toBe(join(dockerDir, '..'));
    expect(resolved.services['worker']?.depends_on?.['datanode']).toEqual({ condition: 'service_healthy' });
  });
});

describe('docker/compose.secure.yaml', () => {
  it(`passes ${compose?.join(' ') ?? 'docker compose'} config, with the init steps first and no secret on a command line`, () => {
    const resolved = resolvedConfig('compose.secure.yaml');
    expect(Object.keys(resolved.services).sort()).toEqual(
      ['dashboard', 'datanode', 'init-secrets', 'init-users', 'namenode', 'offline-broker', 'online-broker-1', 'online-broker-2', 'redis', 'registry', 'scheduler', 'worker', 'zookeeper'].sort(),
    );
    expect(resolved.services['init-users']?.depends_on?.['init-secrets']).toEqual({ condition: 'service_completed_successfully' });
    for (const name of ['online-broker-1', 'online-broker-2', 'registry']) {
      expect(resolved.services[name]?.depends_on?.['init-users'], name).toEqual({ condition: 'service_completed_successfully' });
    }
    expect(resolved.services['registry']?.command).toEqual(expect.arrayContaining(['--tls-cert', '--users-file']));
    for (const [name, service] of Object.entries(resolved.services)) {
      expect((service.command ?? []).join(' '), name).not.toMatch(/password=|:[^/@\s]+@/i);
    }
  });
});
