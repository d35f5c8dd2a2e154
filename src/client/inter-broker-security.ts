/**
 * The client security of a broker's own connections to other brokers (the replica fetcher), from
 * the broker's config keys, Kafka's names:
 *
 *   sasl.mechanism.inter.broker.protocol   PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 (SASL listeners)
 *   inter.broker.sasl.username
 *   inter.broker.sasl.password.file        else env TRIBUTARY_INTER_BROKER_SASL_PASSWORD
 *   ssl.truststore.location                the CAs the other brokers' certificates chain to
 *   ssl.keystore.location (+ ssl.key.password)  the broker's own key and chain, presented as its
 *                                          client certificate (listeners with ssl.client.auth)
 *   ssl.endpoint.identification.algorithm  https (default) | empty
 *
 * The protocol is the inter-broker listener's (inter.broker.listener.name mapped through
 * listener.security.protocol.map), which the broker knows; it is passed in.
 */
import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { TributaryError } from '../common/errors.js';
import { clientTls, parseClientSecurity, type ClientSecurity, type SecurityProtocol } from './security-config.js';

export const INTER_BROKER_PASSWORD_ENV = 'TRIBUTARY_INTER_BROKER_SASL_PASSWORD';

export interface InterBrokerSecuritySettings {
  /** The security protocol of the inter-broker listener. */
  readonly securityProtocol: SecurityProtocol;
  readonly 'sasl.mechanism.inter.broker.protocol'?: string | undefined;
  readonly 'inter.broker.sasl.username'?: string | undefined;
  readonly 'inter.broker.sasl.password.file'?: string | undefined;
  readonly 'ssl.truststore.location'?: string | undefined;
  readonly 'ssl.keystore.location'?: string | undefined;
  /** Decrypts an encrypted broker key in memory (the client certificate needs it in clear). */
  readonly 'ssl.key.password'?: string | undefined;
  readonly 'ssl.endpoint.identification.algorithm'?: string | undefined;
}

/**
 * The ClientSecurity for the replica fetcher's connections; `env` is where the password variable
 * is read (the broker's process.env). Fails with CONFIG_INVALID naming the broker key to fix.
 */
export function interBrokerClientSecurity(settings: InterBrokerSecuritySettings, env: Readonly<Record<string, string | undefined>>): ClientSecurity {
  const protocol = settings.securityProtocol;
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL';
  const sasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
  const properties: Record<string, string> = { 'security.protocol': protocol };
  const set = (key: string, value: string | undefined): void => {
    if (value !== undefined && value !== '') properties[key] = value;
  };
  if (sasl) {
    const mechanism = settings['sasl.mechanism.inter.broker.protocol'];
    if (mechanism === undefined || mechanism === '') missing('sasl.mechanism.inter.broker.protocol', `the inter-broker listener is ${protocol}: name the mechanism brokers authenticate to each other with (SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN)`);
    if (settings['inter.broker.sasl.username'] === undefined || settings['inter.broker.sasl.username'] === '') {
      missing('inter.broker.sasl.username', `the inter-broker listener is ${protocol}: name the user brokers authenticate as (create it with tributary users add)`);
    }
    set('sasl.mechanism', mechanism);
    set('sasl.username', settings['inter.broker.sasl.username']);
    const file = settings['inter.broker.sasl.password.file'];
    if ((file === undefined || file === '') && (env[INTER_BROKER_PASSWORD_ENV] ?? '') === '') {
      missing('inter.broker.sasl.password.file', `brokers authenticate to each other with a password: name a file holding it, or set the environment variable ${INTER_BROKER_PASSWORD_ENV}`);
    }
    set('sasl.password.file', file);
    properties['sasl.password.env'] = INTER_BROKER_PASSWORD_ENV;
  }
  if (tls) {
    set('ssl.truststore.location', settings['ssl.truststore.location']);
    if (settings['ssl.endpoint.identification.algorithm'] !== undefined) properties['ssl.endpoint.identification.algorithm'] = settings['ssl.endpoint.identification.algorithm'];
  }
  const security = parseClientSecurity(properties, { source: 'the broker config (inter-broker client)', env });
  const keystore = settings['ssl.keystore.location'];
  if (!tls || keystore === undefined || keystore === '' || security.tls === undefined) return security;
  return { ...security, tls: withBrokerCertificate(security.tls, keystore, settings['ssl.key.password']) };
}

/** Adds the broker's key and chain as the client certificate, decrypting the key if it is encrypted. */
function withBrokerCertificate(tls: NonNullable<ClientSecurity['tls']>, keystore: string, passphrase: string | undefined): NonNullable<ClientSecurity['tls']> {
  let pem: string;
  try {
    pem = readFileSync(keystore, 'utf8');
  } catch (error) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `ssl.keystore.location names ${keystore}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, cause: error });
  }
  const keyBlock = /-----BEGIN (?:ENCRYPTED |RSA |EC )?PRIVATE KEY-----[\s\S]*?-----END (?:ENCRYPTED |RSA |EC )?PRIVATE KEY-----/.exec(pem)?.[0];
  const chain = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (keyBlock === undefined || chain.length === 0) missing('ssl.keystore.location', `${keystore} must hold the broker's PEM private key and certificate chain`);
  let key: Buffer;
  try {
    key = Buffer.from(createPrivateKey({ key: keyBlock, format: 'pem', ...(passphrase === undefined ? {} : { passphrase }) }).export({ type: 'pkcs8', format: 'pem' }));
  } catch (error) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `the private key in ssl.keystore.location ${keystore} cannot be read${passphrase === undefined ? ' (encrypted? set ssl.key.password)' : ' with ssl.key.password'}: ${(error as Error).message}`,
      cause: error,
    });
  }
  return clientTls({ ...(tls.ca === undefined ? {} : { ca: tls.ca }), cert: Buffer.from(chain.join('\n')), key, checkHostname: tls.checkHostname });
}

function missing(key: string, problem: string): never {
  throw new TributaryError({ code: 'CONFIG_INVALID', message: `the broker config: ${key} is missing or wrong; ${problem}`, details: { key } });
}
