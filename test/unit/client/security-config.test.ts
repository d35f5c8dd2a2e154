/**
 * Client security properties (security-config.ts, command-config.ts, inter-broker-security.ts):
 * what they turn into, where the secrets come from, that the secrets never reach a log, and that
 * each mistake is refused naming the key and the fix.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseClientProperties, readCommandConfig } from '../../../src/client/command-config.js';
import { interBrokerClientSecurity } from '../../../src/client/inter-broker-security.js';
import { parseClientSecurity, securityProtocolOf, type ClientSecurityProperties } from '../../../src/client/security-config.js';
import { createLogger } from '../../../src/common/logger.js';
import { TributaryError } from '../../../src/common/errors.js';
import { loadClientSecurity, parseLoadFile } from '../../../src/etl/load-file.js';
import { parseMirrorSettings, resolveMirrorSecurity } from '../../../src/mirror/config.js';

const dir = mkdtempSync(join(tmpdir(), 'tributary-security-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PASSWORD = 'pa55-w0rd:with=signs';
const CERT = (name: string): string => `-----BEGIN CERTIFICATE-----\n${Buffer.from(name).toString('base64')}\n-----END CERTIFICATE-----\n`;
const KEY = '-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleQ==\n-----END PRIVATE KEY-----\n';

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const passwordFile = file('password', `${PASSWORD}\n`);
const caFile = file('ca.pem', `# our CA\n${CERT('ca')}`);
const keystoreFile = file('client.pem', KEY + CERT('client') + CERT('ca'));

function parse(properties: ClientSecurityProperties, env: Record<string, string> = {}) {
  return parseClientSecurity(properties, { source: 'client.properties', env });
}

/** The TributaryError `run` throws. */
function refusal(run: () => unknown): TributaryError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(TributaryError);
    return error as TributaryError;
  }
  throw new Error('expected a refusal');
}

describe('parseClientSecurity', () => {
  it('is PLAINTEXT without properties', () => {
    expect(parse({})).toEqual({});
    expect(securityProtocolOf(parse({ 'security.protocol': 'PLAINTEXT' }))).toBe('PLAINTEXT');
  });

  it('reads SASL_SSL with SCRAM: password from the file (its newline dropped), CAs and client certificate from PEM', () => {
    const security = parse({
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'SCRAM-SHA-512',
      'sasl.username': 'mirror',
      'sasl.password.file': passwordFile,
      'ssl.truststore.location': caFile,
      'ssl.keystore.location': keystoreFile,
    });
    expect(security.sasl).toMatchObject({ mechanism: 'SCRAM-SHA-512', username: 'mirror' });
    expect(security.sasl?.password).toBe(PASSWORD);
    expect(security.tls?.checkHostname).toBe(true);
    expect(security.tls?.ca?.toString()).toBe(CERT('ca').trim());
    expect(security.tls?.key?.toString()).toBe(KEY.trim());
    expect(security.tls?.cert?.toString()).toBe(`${CERT('client').trim()}\n${CERT('ca').trim()}`);
    expect(securityProtocolOf(security)).toBe('SASL_SSL');
  });

  it('takes the password from TRIBUTARY_SASL_PASSWORD, or the variable sasl.password.env names', () => {
    const base = { 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanism': 'SCRAM-SHA-256', 'sasl.username': 'etl' };
    expect(parse(base, { TRIBUTARY_SASL_PASSWORD: 'from-env' }).sasl?.password).toBe('from-env');
    expect(parse({ ...base, 'sasl.password.env': 'ETL_PASSWORD' }, { ETL_PASSWORD: 'other', TRIBUTARY_SASL_PASSWORD: 'not-this' }).sasl?.password).toBe('other');
    // A file wins over the variable.
    expect(parse({ ...base, 'sasl.password.file': passwordFile }, { TRIBUTARY_SASL_PASSWORD: 'from-env' }).sasl?.password).toBe(PASSWORD);
  });

  it("accepts librdkafka's spellings: lower-case values and sasl.mechanisms", () => {
    const security = parse({ 'security.protocol': 'sasl_ssl', 'sasl.mechanisms': 'plain', 'sasl.username': 'u', 'ssl.endpoint.identification.algorithm': '' }, { TRIBUTARY_SASL_PASSWORD: 'p' });
    expect(security.sasl?.mechanism).toBe('PLAIN');
    expect(security.tls).toEqual({ checkHostname: false });
  });

  it('keeps the password and the private key out of JSON, util.inspect and pino logs', () => {
    const security = parse({
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'PLAIN',
      'sasl.username': 'loader',
      'sasl.password.file': passwordFile,
      'ssl.keystore.location': keystoreFile,
    });
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ name: 'test', destination });
    logger.info({ security, options: { bootstrap: ['h:1'], security } }, 'connecting');
    logger.flush();
    for (const text of [JSON.stringify(security), inspect(security, { depth: 5 }), lines.join('')]) {
      expect(text).toContain('loader');
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain('c2VjcmV0LWtleQ');
    }
    expect(lines.length).toBe(1);
  });

  it.each([
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.username': 'u', 'sasl.password': 'x' }, 'sasl.password', 'sasl.password.file'],
    [{ 'sasl.jaas.config': 'org.apache.kafka.common.security.plain.PlainLoginModule required;' }, 'sasl.jaas.config', 'sasl.password.file'],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.username': 'u' }, 'sasl.password.file', 'TRIBUTARY_SASL_PASSWORD'],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.username': 'u', 'sasl.password.env': 'NOPE' }, 'sasl.password.file', 'NOPE'],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'GSSAPI', 'sasl.username': 'u' }, 'sasl.mechanism', 'SCRAM-SHA-512'],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.username': 'u' }, 'sasl.mechanism', 'is missing'],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'SCRAM-SHA-512' }, 'sasl.username', 'is missing'],
    [{ 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanism': 'PLAIN', 'sasl.username': 'u' }, 'sasl.mechanism', 'SASL_SSL'],
    [{ 'security.protocol': 'TLS' }, 'security.protocol', 'SASL_SSL'],
    [{ 'security.protocol': 'SSL', 'sasl.username': 'u' }, 'sasl.username', 'does not use SASL'],
    [{ 'ssl.truststore.location': caFile }, 'ssl.truststore.location', 'does not use TLS'],
    [{ 'security.protocol': 'SSL', 'ssl.truststore.type': 'JKS' }, 'ssl.truststore.type', 'PEM files only'],
    [{ 'security.protocol': 'SSL', 'ssl.cipher.suites': 'x' }, 'ssl.cipher.suites', 'ssl.truststore.location'],
    [{ 'security.protocol': 'SSL', 'ssl.truststore.password': 'changeit' }, 'ssl.truststore.password', 'PEM'],
    [{ 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': 'ldap' }, 'ssl.endpoint.identification.algorithm', 'https'],
    [{ 'security.protocol': 'SSL', 'ssl.truststore.location': join(dir, 'missing.pem') }, 'ssl.truststore.location', 'ENOENT'],
    [{ 'security.protocol': 'SSL', 'ssl.truststore.location': passwordFile }, 'ssl.truststore.location', 'no PEM certificate'],
    [{ 'security.protocol': 'SSL', 'ssl.keystore.location': caFile }, 'ssl.keystore.location', '0 private keys'],
    [{ 'security.protocol': 'SSL', 'ssl.keystore.location': file('enc.pem', `-----BEGIN ENCRYPTED PRIVATE KEY-----\nAA==\n-----END ENCRYPTED PRIVATE KEY-----\n${CERT('c')}`) }, 'ssl.keystore.location', 'encrypted'],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.username': 'u', 'sasl.password.file': join(dir, 'nope') }, 'sasl.password.file', 'ENOENT'],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.username': 'u', 'sasl.password.file': file('empty', '\n') }, 'sasl.password.file', 'empty'],
  ])('refuses %j naming %s', (properties, key, advice) => {
    const error = refusal(() => parse(properties));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain('client.properties');
    expect(error.message).toContain(key);
    expect(error.message).toContain(advice);
  });
});

describe('--command-config files', () => {
  it('reads Java properties, ignores other client settings, and takes relative paths from the file', () => {
    const folder = join(dir, 'conf');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'ca.pem'), CERT('ca'));
    writeFileSync(join(folder, 'pw'), PASSWORD);
    const path = file(
      'conf/client.properties',
      ['# Kafka tools config', 'client.id=tools', 'security.protocol=SASL_SSL', 'sasl.mechanism: SCRAM-SHA-512', 'sasl.username = admin', 'sasl.password.file=pw', 'ssl.truststore.location=ca.pem', '! comment'].join('\n'),
    );
    const security = readCommandConfig(path, {});
    expect(security.sasl).toMatchObject({ mechanism: 'SCRAM-SHA-512', username: 'admin' });
    expect(security.sasl?.password).toBe(PASSWORD);
    expect(security.tls?.ca?.toString()).toBe(CERT('ca').trim());
  });

  it('refuses a line that is not key=value, naming the line', () => {
    expect(() => parseClientProperties('security.protocol=SSL\nwhat is this', 'c.properties')).toThrow(/c\.properties line 2: expected key=value/);
    expect(refusal(() => readCommandConfig(join(dir, 'absent.properties'), {})).message).toContain('cannot read --command-config');
  });
});

describe('security blocks of config files', () => {
  const load = (security: string) =>
    parseLoadFile(
      ['name: views', `source: { bootstrap: [127.0.0.1:9092], security: ${security} }`, 'topics: [views]', 'registry: http://127.0.0.1:8081', 'warehouse: { url: ./wh }', 'format: avro', 'codec: deflate', 'timeField: t', 'audit: {}'].join('\n'),
      join(dir, 'views.yaml'),
    );

  it('a load file keeps source.security unread until it connects; paths are relative to the file; the audit inherits it', () => {
    const parsed = load('{ security.protocol: SASL_SSL, sasl.mechanism: SCRAM-SHA-512, sasl.username: etl, sasl.password.file: password, ssl.truststore.location: ca.pem }');
    expect(parsed.audit?.security).toEqual(parsed.source.security);
    const security = loadClientSecurity(parsed, 'source', {});
    expect(security?.sasl?.password).toBe(PASSWORD);
    expect(security?.tls?.ca).toBeDefined();
  });

  it('a bad block fails when the file is read, naming the field', () => {
    expect(() => load('{ security.protocol: SASL_SSL, sasl.mechanism: GSSAPI, sasl.username: u }')).toThrow(/source\.security: .*sasl\.mechanism/);
    expect(() => load('{ sasl.password: hunter2 }')).toThrow(/sasl\.password may not be given/);
  });

  it("a mirror's sources and target each have their own; --command-config replaces the target's", () => {
    const settings = parseMirrorSettings(
      {
        sources: [
          { name: 'dc1', zookeeper: '127.0.0.1:2181/dc1', security: { 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.username': 'mirror', 'sasl.password.file': passwordFile } },
          { name: 'dc2', zookeeper: '127.0.0.1:2181/dc2' },
        ],
        whitelist: '.*',
        group: 'mirror',
        targetSecurity: { 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanism': 'SCRAM-SHA-256', 'sasl.username': 'offline', 'sasl.password.env': 'OFFLINE_PW' },
      },
      'mirror.yaml',
    );
    const security = resolveMirrorSecurity(settings, { OFFLINE_PW: 'o' });
    expect(security.sources.get('dc1')?.sasl?.password).toBe(PASSWORD);
    expect(security.sources.has('dc2')).toBe(false);
    expect(security.target?.sasl).toMatchObject({ mechanism: 'SCRAM-SHA-256', username: 'offline' });
    expect(resolveMirrorSecurity(settings, { OFFLINE_PW: 'o' }, {}).target).toEqual({});
    expect(() => parseMirrorSettings({ sources: [{ name: 'dc1', zookeeper: 'h:1', security: { 'security.protocol': 'SSL', 'sasl.username': 'x' } }], whitelist: '.*', group: 'g' }, 'mirror.yaml')).toThrow(
      /sources\.0\.security: .*does not use SASL/,
    );
  });
});

describe('interBrokerClientSecurity', () => {
  it('builds SASL_SSL from the broker keys, the password from TRIBUTARY_INTER_BROKER_SASL_PASSWORD, and the broker key decrypted', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const encrypted = privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'keypass' }).toString();
    const keystore = file('broker.pem', encrypted + CERT('broker') + CERT('ca'));
    const security = interBrokerClientSecurity(
      {
        securityProtocol: 'SASL_SSL',
        'sasl.mechanism.inter.broker.protocol': 'SCRAM-SHA-512',
        'inter.broker.sasl.username': 'broker',
        'ssl.truststore.location': caFile,
        'ssl.keystore.location': keystore,
        'ssl.key.password': 'keypass',
      },
      { TRIBUTARY_INTER_BROKER_SASL_PASSWORD: 'between-brokers', TRIBUTARY_SASL_PASSWORD: 'not-this' },
    );
    expect(security.sasl).toMatchObject({ mechanism: 'SCRAM-SHA-512', username: 'broker' });
    expect(security.sasl?.password).toBe('between-brokers');
    expect(security.tls?.key?.toString()).toContain('-----BEGIN PRIVATE KEY-----');
    expect(security.tls?.cert?.toString()).toContain(CERT('broker').trim());
    expect(JSON.stringify(security)).not.toContain('between-brokers');
  });

  it('is PLAINTEXT for a PLAINTEXT inter-broker listener, and names the missing key otherwise', () => {
    expect(interBrokerClientSecurity({ securityProtocol: 'PLAINTEXT', 'inter.broker.sasl.username': 'ignored' }, {})).toEqual({});
    expect(refusal(() => interBrokerClientSecurity({ securityProtocol: 'SASL_SSL', 'inter.broker.sasl.username': 'b' }, {})).message).toContain('sasl.mechanism.inter.broker.protocol');
    expect(refusal(() => interBrokerClientSecurity({ securityProtocol: 'SASL_SSL', 'sasl.mechanism.inter.broker.protocol': 'PLAIN', 'inter.broker.sasl.username': 'b' }, {})).message).toContain(
      'TRIBUTARY_INTER_BROKER_SASL_PASSWORD',
    );
  });
});
