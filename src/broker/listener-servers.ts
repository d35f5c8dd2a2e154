/**
 * Opens one BrokerServer per listener, with what its security protocol asks for: TLS from the
 * ssl.* settings (SSL, SASL_SSL), a SASL authenticator per connection (SASL_PLAINTEXT, SASL_SSL).
 * If a listener cannot open, those already open are closed again.
 */
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { BrokerEndpoint } from './broker-endpoints.js';
import type { BrokerConfig } from './config.js';
import type { ConnectionListener, ConnectionOptions } from './connection.js';
import { usesSasl, usesTls, type ListenerSpec } from './listeners.js';
import type { BrokerMetrics } from './metrics.js';
import type { RequestRouter } from './router.js';
import { isSaslMechanism, type CredentialSource, type SaslMechanism } from './security/sasl-mechanisms.js';
import type { SecurityProtocol } from './security/identity.js';
import { tlsSettingsFromConfig } from './security/tls-context.js';
import { BrokerServer } from './server.js';

export interface OpenListener {
  readonly spec: ListenerSpec;
  readonly server: BrokerServer;
  /** What the registration tells clients (the bound port when none was advertised). */
  readonly endpoint: BrokerEndpoint;
}

export interface ListenerSecurityContext {
  readonly config: BrokerConfig;
  readonly credentials: CredentialSource;
  readonly metrics: BrokerMetrics;
  readonly logger: Logger;
}

/** sasl.enabled.mechanisms, checked: every name must be one this broker implements. */
export function enabledMechanisms(config: BrokerConfig): SaslMechanism[] {
  const names = config['sasl.enabled.mechanisms']
    .split(',')
    .map((name) => name.trim().toUpperCase())
    .filter((name) => name !== '');
  for (const name of names) {
    if (!isSaslMechanism(name)) {
      throw new TributaryError({ code: 'CONFIG_INVALID', message: `sasl.enabled.mechanisms: ${name} is not supported; choose among SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN` });
    }
  }
  return names as SaslMechanism[];
}

/** The mechanisms a listener offers: PLAIN never without TLS (the password would cross the network in clear). */
export function mechanismsOn(config: BrokerConfig, protocol: SecurityProtocol): SaslMechanism[] {
  if (!usesSasl(protocol)) return [];
  const enabled = enabledMechanisms(config);
  return protocol === 'SASL_PLAINTEXT' ? enabled.filter((mechanism) => mechanism !== 'PLAIN') : enabled;
}

export async function openListeners(specs: readonly ListenerSpec[], router: RequestRouter, base: ConnectionOptions, security: ListenerSecurityContext): Promise<OpenListener[]> {
  const { config, metrics, logger } = security;
  const opened: OpenListener[] = [];
  try {
    for (const spec of specs) {
      const mechanisms = mechanismsOn(config, spec.securityProtocol);
      if (usesSasl(spec.securityProtocol) && mechanisms.length === 0) {
        throw new TributaryError({ code: 'CONFIG_INVALID', message: `listener ${spec.name} (${spec.securityProtocol}) has no SASL mechanism: sasl.enabled.mechanisms offers ${config['sasl.enabled.mechanisms']} and PLAIN needs TLS` });
      }
      if (spec.securityProtocol === 'SASL_PLAINTEXT' && enabledMechanisms(config).includes('PLAIN')) {
        logger.warn({ listener: spec.name }, `listener ${spec.name} is SASL_PLAINTEXT: PLAIN is not offered there (the password would travel in clear); use SASL_SSL for PLAIN`);
      }
      const listener: ConnectionListener = {
        name: spec.name,
        securityProtocol: spec.securityProtocol,
        ...(usesSasl(spec.securityProtocol)
          ? {
              sasl: {
                listenerName: spec.name,
                mechanisms,
                credentials: security.credentials,
                failedAuthenticationDelayMs: config['connection.failed.authentication.delay.ms'],
                maxReceiveBytes: config['sasl.server.max.receive.size'],
                metrics: {
                  succeeded: (name, mechanism) => metrics.authenticationSuccesses.inc({ listener: name, mechanism }),
                  failed: (name, mechanism) => metrics.authenticationFailures.inc({ listener: name, mechanism }),
                },
                logger,
              },
            }
          : {}),
      };
      const tls = usesTls(spec.securityProtocol)
        ? {
            settings: tlsSettingsFromConfig(config, spec.name, spec.securityProtocol === 'SSL' ? 'SSL' : 'SASL_SSL'),
            onHandshakeFailed: () => metrics.authenticationFailures.inc({ listener: spec.name, mechanism: 'SSL' }),
            onClientAuthenticated: () => metrics.authenticationSuccesses.inc({ listener: spec.name, mechanism: 'SSL' }),
          }
        : undefined;
      const server = await BrokerServer.listen({ host: spec.host, port: spec.port }, router, { ...base, listener }, tls);
      opened.push({
        spec,
        server,
        endpoint: { listenerName: spec.name, securityProtocol: spec.securityProtocol, host: spec.advertisedHost, port: spec.advertisedPort ?? server.address.port },
      });
    }
    return opened;
  } catch (error) {
    await Promise.all(opened.map((listener) => listener.server.stop(0)));
    throw error;
  }
}
