/**
 * docker/compose.secure.yaml's own pieces, checked without a container engine: the files it
 * mounts exist, the registry runs with flags `tributary registry start` has, the secured load
 * file and mirror config are valid (registry over HTTPS with credentials from files), and the
 * init scripts use the repository's certificate script and never put a password in argv.
 * test/integration/docker/compose-config.test.ts has `docker compose config` check the syntax.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/program.js';
import { readLoadFile } from '../../../src/etl/load-file.js';
import { loadMirrorSettingsFile } from '../../../src/mirror/config.js';

const dockerDir = join(import.meta.dirname, '..', '..', '..', 'docker');
const secure = join(dockerDir, 'secure');

interface Service {
  readonly command?: readonly string[];
  readonly entrypoint?: readonly string[];
  readonly volumes?: readonly string[];
}
const compose = parseYaml(readFileSync(join(dockerDir, 'compose.secure.yaml'), 'utf8'), { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };

describe('docker/compose.secure.yaml', () => {
  it('mounts only files that exist and volumes it declares', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0] ?? '';
        if (source.startsWith('.')) expect(existsSync(join(dockerDir, source)), `${name} mounts ${source}`).toBe(true);
        else expect(Object.keys(compose.volumes), `${name} uses volume ${source}`).toContain(source);
      }
    }
  });

  it('starts the registry with HTTPS and a users file, using flags `registry start` has', () => {
    const command = compose.services['registry']?.command ?? [];
    const start = buildProgram({ writeOut: () => undefined, writeErr: () => undefined })
      .commands.find((c) => c.name() === 'registry')
      ?.commands.find((c) => c.name() === 'start');
    const known = new Set(start?.options.map((option) => option.long));
    for (const flag of command.filter((arg) => arg.startsWith('--'))) expect(known.has(flag), flag).toBe(true);
    expect(command).toEqual(expect.arrayContaining(['--tls-cert', '/etc/tributary/tls/services.pem', '--users-file', '/etc/tributary/secrets/registry-users']));
  });

  it('has a valid secured load file and mirror config, reaching the registry over HTTPS with credentials from files', async () => {
    const load = await readLoadFile(join(secure, 'jobs', 'page-views.yaml'));
    expect(load.registry).toBe('https://registry:8081');
    expect(load.registryConfig).toEqual({
      'basic.auth.user.info.file': '/etc/tributary/secrets/registry-reader.user-info',
      'schema.registry.ssl.truststore.location': '/etc/tributary/tls/ca.pem',
    });
    const mirror = loadMirrorSettingsFile(join(secure, 'mirror.yaml'));
    expect(mirror.registry).toBe('https://registry:8081');
    expect(mirror.registryConfig?.['basic.auth.user.info.file']).toBe('/etc/tributary/secrets/registry-writer.user-info');
  });

  it('makes certificates with scripts/make-certificates.sh and passes passwords by file or stdin only', () => {
    const initSecrets = readFileSync(join(secure, 'init-secrets.sh'), 'utf8');
    expect(initSecrets).toContain('scripts=${SCRIPTS_DIR:-/opt/tributary/scripts}');
    expect(initSecrets).toContain('"$scripts/make-certificates.sh" "$ca"');
    expect(compose.services['init-secrets']?.volumes).toContain('../scripts:/opt/tributary/scripts:ro');
    const initUsers = readFileSync(join(secure, 'init-users.sh'), 'utf8');
    expect(initUsers).toMatch(/tributary users add .*--password-file/s);
    expect(initUsers).toMatch(/tributary registry user-line "\$role" --role "\$grant" <"\$secrets\/registry-\$role-password"/);
    expect(initUsers).not.toMatch(/--password[ =]/);
  });
});
