/**
 * What a TLS listener serves, from PEM files: `ssl.keystore.location` (private key + certificate
 * chain in one file, optionally protected by `ssl.key.password`) and `ssl.truststore.location`
 * (the CAs whose client certificates are accepted). TLS 1.2 and 1.3 only. The files are read at
 * start and again on every reload, so certificates can be rotated without a restart.
 */
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContextOptions, type TlsOptions } from 'node:tls';
import { TributaryError } from '../../common/errors.js';
import type { BrokerConfig } from '../config.js';

export type ClientAuth = 'none' | 'requested' | 'required';

export interface TlsSettings {
  readonly keystore: string;
  readonly keyPassword: string | undefined;
  readonly truststore: string | undefined;
  readonly clientAuth: ClientAuth;
}

/**
 * A listener's TLS settings. `ssl.client.auth` applies to SSL listeners only: on SASL_SSL the
 * client authenticates with SASL and the broker-wide setting is ignored, as in Kafka (KIP-684).
 */
export function tlsSettingsFromConfig(config: BrokerConfig, listenerName: string, protocol: 'SSL' | 'SASL_SSL' = 'SSL'): TlsSettings {
  const keystore = config['ssl.keystore.location'];
  if (keystore === undefined || keystore === '') {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `listener ${listenerName} uses TLS: set ssl.keystore.location to a PEM file holding the private key and certificate chain` });
  }
  const clientAuth = protocol === 'SSL' ? config['ssl.client.auth'] : 'none';
  const truststore = config['ssl.truststore.location'];
  if (clientAuth !== 'none' && (truststore === undefined || truststore === '')) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `ssl.client.auth=${clientAuth} needs ssl.truststore.location: the PEM CAs that sign client certificates` });
  }
  return { keystore, keyPassword: config['ssl.key.password'], truststore: truststore === '' ? undefined : truststore, clientAuth };
}

/** Reads the PEM files and checks that key and certificate belong together (throws CONFIG_INVALID naming the file). */
export async function loadSecureContextOptions(settings: TlsSettings): Promise<SecureContextOptions> {
  const read = async (path: string, what: string): Promise<Buffer> => {
    try {
      return await readFile(path);
    } catch (error) {
      throw new TributaryError({ code: 'CONFIG_INVALID', message: `cannot read the ${what} ${path}: ${(error as Error).message}`, cause: error });
    }
  };
  const keystore = await read(settings.keystore, 'TLS keystore (ssl.keystore.location)');
  const options: SecureContextOptions = {
    // One PEM file holds both: Node takes the private key block for `key` and every certificate for `cert`.
    key: keystore,
    cert: keystore,
    ...(settings.keyPassword === undefined ? {} : { passphrase: settings.keyPassword }),
    ...(settings.truststore === undefined ? {} : { ca: await read(settings.truststore, 'TLS truststore (ssl.truststore.location)') }),
    minVersion: 'TLSv1.2',
    maxVersion: 'TLSv1.3',
  };
  try {
    createSecureContext(options);
  } catch (error) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `${settings.keystore} must hold a PEM private key and its certificate chain${settings.keyPassword === undefined ? '' : ' (decrypted by ssl.key.password)'}: ${(error as Error).message}`,
      cause: error,
    });
  }
  return options;
}

/** Server options: the secure context plus whether client certificates are asked for and required. */
export function tlsServerOptions(settings: TlsSettings, context: SecureContextOptions): TlsOptions {
  return {
    ...context,
    requestCert: settings.clientAuth !== 'none',
    rejectUnauthorized: settings.clientAuth === 'required',
    // A peer that never finishes its handshake is dropped well before the idle timeout.
    handshakeTimeout: 30_000,
  };
}
