/**
 * The registry's HTTPS settings from PEM files: a certificate chain and its private key (one
 * file may hold both, as the brokers' `ssl.keystore.location` does), optionally a passphrase
 * file for an encrypted key, and a CA bundle for client certificates.
 */
import type { ServerOptions } from 'node:https';
import { readFile } from 'node:fs/promises';
import { TributaryError } from '../common/errors.js';

export type ClientAuth = 'none' | 'requested' | 'required';

export interface RegistryTlsFiles {
  /** PEM certificate chain (server certificate first); may also hold the key. */
  readonly certFile: string;
  /** PEM private key; default: taken from certFile. */
  readonly keyFile?: string | undefined;
  /** A file whose first line is the key's passphrase. */
  readonly keyPasswordFile?: string | undefined;
  /** PEM CA bundle that client certificates must chain to (needed unless clientAuth is none). */
  readonly caFile?: string | undefined;
  /** Default none: basic authentication is the registry's way of knowing the caller. */
  readonly clientAuth?: ClientAuth | undefined;
}

export async function readRegistryTls(files: RegistryTlsFiles): Promise<ServerOptions> {
  const clientAuth = files.clientAuth ?? 'none';
  if (clientAuth !== 'none' && files.caFile === undefined) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `client certificates (${clientAuth}) need a CA bundle to check them against: give --tls-ca FILE` });
  }
  const cert = await pem(files.certFile, 'certificate');
  const key = files.keyFile === undefined ? cert : await pem(files.keyFile, 'private key');
  if (!/-----BEGIN CERTIFICATE-----/.test(cert)) throw invalid(`${files.certFile} holds no PEM certificate`);
  if (!/-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/.test(key)) {
    throw invalid(`${files.keyFile ?? files.certFile} holds no PEM private key${files.keyFile === undefined ? '; give it with --tls-key FILE' : ''}`);
  }
  const passphrase = files.keyPasswordFile === undefined ? undefined : (await pem(files.keyPasswordFile, 'key password')).split(/\r?\n/)[0];
  return {
    cert,
    key,
    ...(passphrase === undefined ? {} : { passphrase }),
    ...(files.caFile === undefined ? {} : { ca: await pem(files.caFile, 'CA bundle') }),
    minVersion: 'TLSv1.2',
    requestCert: clientAuth !== 'none',
    rejectUnauthorized: clientAuth === 'required',
  };
}

async function pem(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `cannot read the registry's ${what} ${file}: ${(error as Error).message}`, cause: error });
  }
}

function invalid(message: string): TributaryError {
  return new TributaryError({ code: 'CONFIG_INVALID', message });
}
