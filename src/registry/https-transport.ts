/**
 * The registry client's HTTP transport when it needs TLS settings of its own (a private CA, a
 * client certificate, no hostname check), which Node's global fetch cannot take: one request
 * over node:https (or node:http), with fetch's shape so the client need not care which it uses.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { checkServerIdentity } from 'node:tls';

export interface RegistryRequestInit {
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly signal: AbortSignal;
}

export interface RegistryResponse {
  readonly status: number;
  text(): Promise<string>;
}

/** What the client sends requests with: Node's global fetch satisfies it. */
export type RegistryFetch = (url: URL, init: RegistryRequestInit) => Promise<RegistryResponse>;

export interface RegistryClientTls {
  /** PEM CA certificates trusted instead of the system's. */
  readonly ca?: Buffer | undefined;
  /** PEM client certificate chain and its key, for registries that ask for one. */
  readonly cert?: Buffer | undefined;
  readonly key?: Buffer | undefined;
  /** Check that the certificate names the host (default true). */
  readonly checkHostname?: boolean | undefined;
}

/** A fetch over node:https with these TLS settings (node:http for an http:// URL). */
export function httpsTransport(tls: RegistryClientTls): RegistryFetch {
  return (url, init) =>
    new Promise((resolve, reject) => {
      const options: RequestOptions = {
        method: init.method,
        headers: { ...init.headers, ...(init.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(init.body)) }) },
        signal: init.signal,
        ...(tls.ca === undefined ? {} : { ca: tls.ca }),
        ...(tls.cert === undefined ? {} : { cert: tls.cert }),
        ...(tls.key === undefined ? {} : { key: tls.key }),
        ...(tls.checkHostname === false ? { checkServerIdentity: () => undefined } : { checkServerIdentity }),
      };
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const request = send(url, options, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: response.statusCode ?? 0, text: () => Promise.resolve(text) });
        });
      });
      // fetch's shape: a failure is a TypeError whose cause is the socket's error.
      request.on('error', (error) => reject(error.name === 'AbortError' ? abortReason(init.signal, error) : new TypeError('fetch failed', { cause: error })));
      request.end(init.body);
    });
}

function abortReason(signal: AbortSignal, fallback: Error): Error {
  return signal.reason instanceof Error ? signal.reason : fallback;
}
