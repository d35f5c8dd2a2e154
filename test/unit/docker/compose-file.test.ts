/**
 * docker/compose.yaml and docker/Dockerfile, checked without a container engine (CI machines have
 * none): the services the issue names, references that resolve (depends_on, volumes, files
 * mounted), every Tributary command and flag known to the `tributary` CLI with its required
 * flags given, the mounted load file and mirror config valid, the image not running as root.
 * test/integration/docker/compose-config.test.ts has `docker compose config` check the syntax.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/program.js';
import { readLoadFile } from '../../../src/etl/load-file.js';
import { loadMirrorSettingsFile } from '../../../src/mirror/config.js';

const dockerDir = join(import.meta.dirname, '..', '..', '..', 'docker');
const root = join(dockerDir, '..');

interface Service {
  readonly image?: string;
  readonly build?: { readonly context: string; readonly dockerfile: string };
  readonly command?: readonly string[];
  readonly depends_on?: Readonly<Record<string, { readonly condition: string }>>;
  readonly volumes?: readonly string[];
  readonly healthcheck?: { readonly test: readonly string[] };
  readonly env_file?: string;
}

const compose = parseYaml(readFileSync(join(dockerDir, 'compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const services = compose.services;
const tributaryServices = Object.entries(services).filter(([, service]) => service.image === 'tributary:local');

describe('docker/compose.yaml', () => {
  it('has the services of the issue: ZooKeeper, HDFS, Redis, two online brokers, the offline broker with the mirror, registry, worker, scheduler, dashboard', () => {
    expect(Object.keys(services).sort()).toEqual(
      ['dashboard', 'datanode', 'namenode', 'offline-broker', 'online-broker-1', 'online-broker-2', 'redis', 'registry', 'scheduler', 'worker', 'zookeeper'].sort(),
    );
    expect(services['offline-broker']?.command).toContain('--mirror-config');
    expect(tributaryServices.map(([name]) => name).sort()).toEqual(['dashboard', 'offline-broker', 'online-broker-1', 'online-broker-2', 'registry', 'scheduler', 'worker']);
  });

  it('builds the Tributary services from docker/Dockerfile with the repository as context', () => {
    for (const [name, service] of tributaryServices) {
      expect(service.build, name).toEqual({ context: '..', dockerfile: 'docker/Dockerfile' });
      expect(existsSync(join(dockerDir, service.build!.context, service.build!.dockerfile)), name).toBe(true);
    }
  });

  it('depends only on services it defines, on named volumes it declares and on files that exist', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const target of Object.keys(service.depends_on ?? {})) expect(Object.keys(services), `${name} depends on ${target}`).toContain(target);
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0] ?? '';
        if (source.startsWith('.')) expect(existsSync(join(dockerDir, source)), `${name} mounts ${source}`).toBe(true);
        else expect(Object.keys(compose.volumes), `${name} uses volume ${source}`).toContain(source);
      }
      if (service.env_file !== undefined) expect(existsSync(join(dockerDir, service.env_file)), name).toBe(true);
    }
  });

  it('has a healthcheck on every service that serves something (worker and scheduler only pull from Redis)', () => {
    const without = Object.entries(services).filter(([, service]) => service.healthcheck === undefined).map(([name]) => name);
    expect(without.sort()).toEqual(['scheduler', 'worker']);
  });

  it('runs only tributary commands and flags that exist, with every required flag given', () => {
    const program = buildProgram({ writeOut: () => undefined, writeErr: () => undefined });
    for (const [name, service] of tributaryServices) {
      const args = [...(service.command ?? [])];
      let command: Command = program;
      while (args[0] !== undefined && !args[0].startsWith('--')) {
        const next = command.commands.find((sub) => sub.name() === args[0]);
        expect(next, `${name}: tributary has no command "${args[0]}" under "${command.name()}"`).toBeDefined();
        command = next!;
        args.shift();
      }
      expect(command.commands, `${name} names a whole command`).toEqual([]);
      const known = new Map(command.options.map((option) => [option.long, option]));
      const given = args.filter((arg) => arg.startsWith('--'));
      for (const flag of given) expect(known.has(flag), `${name}: ${command.name()} has no ${flag}`).toBe(true);
      for (const option of command.options) if (option.mandatory) expect(given, `${name}: ${command.name()} needs ${option.long}`).toContain(option.long);
    }
  });

  it('mounts a valid load file where the worker, the scheduler and the dashboard read it, and a valid mirror config', async () => {
    for (const name of ['worker', 'scheduler', 'dashboard']) expect(services[name]?.volumes, name).toContain('./jobs:/etc/tributary/jobs:ro');
    for (const name of ['scheduler', 'dashboard']) expect(services[name]?.command?.join(' '), name).toContain('--loads /etc/tributary/jobs');
    const load = await readLoadFile(join(dockerDir, 'jobs', 'page-views.yaml'));
    expect(load.source.bootstrap).toEqual(['offline-broker:9092']);
    expect(load.warehouse.url).toBe('webhdfs://namenode:9870/?user=etl');
    expect(load.schedule).toBe('5 * * * *');
    const mirror = loadMirrorSettingsFile(join(dockerDir, 'mirror.yaml'));
    expect(mirror.sources).toEqual([{ name: 'online', zookeeper: 'zookeeper:2181/online' }]);
    // The brokers' chroots are the ones the mirror reads and the dashboard's lag comes from.
    expect(services['online-broker-1']?.command).toContain('zookeeper:2181/online');
    expect(services['offline-broker']?.command).toContain('zookeeper:2181/offline');
  });
});

describe('docker/Dockerfile', () => {
  const dockerfile = readFileSync(join(dockerDir, 'Dockerfile'), 'utf8');

  it('starts from Node 20 on Debian bookworm, runs bin/tributary.js, and not as root', () => {
    expect(dockerfile).toMatch(/^FROM node:20-bookworm-slim$/m);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "\/opt\/tributary\/bin\/tributary\.js"\]$/m);
  });

  it('copies only paths that exist in the repository', () => {
    const sources = [...dockerfile.matchAll(/^COPY (.+) \S+$/gm)].flatMap((match) => (match[1] ?? '').split(' '));
    expect(sources.length).toBeGreaterThan(5);
    for (const source of sources) expect(existsSync(join(root, source)), source).toBe(true);
  });
});
