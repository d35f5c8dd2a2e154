/**
 * The broker's listeners from Kafka's settings:
 *
 *   listeners                       = NAME://host:port[,NAME://host:port…]   (host empty: every interface)
 *   advertised.listeners            = NAME://host:port[,…]                   (what clients are told)
 *   listener.security.protocol.map  = NAME:PROTOCOL[,…]                      (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
 *   inter.broker.listener.name      = NAME                                   (where replica fetchers connect)
 *
 * Without `listeners` the broker has one PLAINTEXT listener on its --listen address, as before
 * listeners existed. Names are case-insensitive (kept upper-case, as Kafka does).
 */
import { hostname } from 'node:os';
import { TributaryError } from '../common/errors.js';
import type { BrokerConfig } from './config.js';
import type { SecurityProtocol } from './security/identity.js';

export interface ListenerSpec {
  readonly name: string;
  readonly securityProtocol: SecurityProtocol;
  /** Address to bind; '' binds every interface. */
  readonly host: string;
  /** 0: any free port (tests). */
  readonly port: number;
  /** Host clients are told to connect to. */
  readonly advertisedHost: string;
  /** Port clients are told to connect to; undefined: the bound port. */
  readonly advertisedPort: number | undefined;
}

const PROTOCOLS: readonly SecurityProtocol[] = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'];
const WILDCARD_HOSTS = new Set(['', '0.0.0.0', '::']);

function invalid(message: string): TributaryError {
  return new TributaryError({ code: 'CONFIG_INVALID', message });
}

interface Endpoint {
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

/** `NAME://host:port` (an IPv6 host in brackets) → its parts. */
export function parseEndpoint(text: string, setting: string): Endpoint {
  const match = /^([A-Za-z0-9_-]+):\/\/(\[[0-9a-fA-F:.]*\]|[^:/\s[\]]*):(\d{1,5})$/.exec(text.trim());
  if (match === null || Number(match[3]) > 65535) throw invalid(`${setting}: "${text.trim()}" is not NAME://host:port`);
  return { name: match[1]!.toUpperCase(), host: match[2]!.replace(/^\[|\]$/g, ''), port: Number(match[3]) };
}

function parseEndpoints(text: string, setting: string): Endpoint[] {
  const endpoints = text
    .split(',')
    .filter((entry) => entry.trim() !== '')
    .map((entry) => parseEndpoint(entry, setting));
  const names = new Set<string>();
  for (const endpoint of endpoints) {
    if (names.has(endpoint.name)) throw invalid(`${setting} names listener ${endpoint.name} twice`);
    names.add(endpoint.name);
  }
  return endpoints;
}

export function parseSecurityProtocolMap(text: string): Map<string, SecurityProtocol> {
  const map = new Map<string, SecurityProtocol>();
  for (const entry of text.split(',').filter((item) => item.trim() !== '')) {
    const [name, protocol, extra] = entry.split(':').map((part) => part.trim().toUpperCase());
    if (name === undefined || name === '' || protocol === undefined || extra !== undefined || !PROTOCOLS.includes(protocol as SecurityProtocol)) {
      throw invalid(`listener.security.protocol.map: "${entry.trim()}" is not NAME:PROTOCOL with PROTOCOL one of ${PROTOCOLS.join(', ')}`);
    }
    map.set(name, protocol as SecurityProtocol);
  }
  return map;
}

/**
 * The listeners to open. `defaultListen` is the --listen address (one PLAINTEXT listener when
 * `listeners` is unset); `advertisedHost` (--advertised-host) replaces a listener's host in what
 * clients are told unless advertised.listeners names that listener.
 */
export function resolveListeners(config: BrokerConfig, defaultListen: { host: string; port: number } | undefined, advertisedHost?: string): ListenerSpec[] {
  const protocols = parseSecurityProtocolMap(config['listener.security.protocol.map']);
  let endpoints: Endpoint[];
  if (config.listeners === undefined || config.listeners.trim() === '') {
    if (defaultListen === undefined) throw invalid('no listener: give --listen HOST:PORT or set listeners=NAME://host:port');
    endpoints = [{ name: 'PLAINTEXT', host: defaultListen.host, port: defaultListen.port }];
    if (!protocols.has('PLAINTEXT')) protocols.set('PLAINTEXT', 'PLAINTEXT');
  } else {
    endpoints = parseEndpoints(config.listeners, 'listeners');
    if (endpoints.length === 0) throw invalid('listeners is empty');
  }
  const advertised = new Map(parseEndpoints(config['advertised.listeners'] ?? '', 'advertised.listeners').map((endpoint) => [endpoint.name, endpoint]));
  for (const name of advertised.keys()) {
    if (!endpoints.some((endpoint) => endpoint.name === name)) throw invalid(`advertised.listeners names ${name}, which is not in listeners`);
  }
  const ports = new Set<number>();
  return endpoints.map((endpoint) => {
    const securityProtocol = protocols.get(endpoint.name);
    if (securityProtocol === undefined) throw invalid(`listener ${endpoint.name} has no security protocol: add ${endpoint.name}:PROTOCOL to listener.security.protocol.map`);
    if (endpoint.port !== 0 && ports.has(endpoint.port)) throw invalid(`listeners use port ${endpoint.port} twice`);
    ports.add(endpoint.port);
    const told = advertised.get(endpoint.name);
    if (told !== undefined && WILDCARD_HOSTS.has(told.host)) throw invalid(`advertised.listeners: ${endpoint.name} must name a host clients can reach, not "${told.host}"`);
    const fallbackHost = advertisedHost ?? (WILDCARD_HOSTS.has(endpoint.host) ? hostname() : endpoint.host);
    return {
      name: endpoint.name,
      securityProtocol,
      host: endpoint.host,
      port: endpoint.port,
      advertisedHost: told?.host ?? fallbackHost,
      advertisedPort: told === undefined || told.port === 0 ? undefined : told.port,
    };
  });
}

/** inter.broker.listener.name, or the first PLAINTEXT listener, or the first listener. */
export function interBrokerListener(config: BrokerConfig, listeners: readonly ListenerSpec[]): ListenerSpec {
  const named = config['inter.broker.listener.name']?.trim().toUpperCase();
  if (named !== undefined && named !== '') {
    const listener = listeners.find((candidate) => candidate.name === named);
    if (listener === undefined) throw invalid(`inter.broker.listener.name is ${named}, which is not in listeners`);
    return listener;
  }
  return listeners.find((listener) => listener.securityProtocol === 'PLAINTEXT') ?? listeners[0]!;
}

export function usesTls(protocol: SecurityProtocol): boolean {
  return protocol === 'SSL' || protocol === 'SASL_SSL';
}

export function usesSasl(protocol: SecurityProtocol): boolean {
  return protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
}
