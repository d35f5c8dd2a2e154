/** Listener settings (listeners.ts) and the registration's endpoints (broker-endpoints.ts). */
import { describe, expect, it } from 'vitest';
import { endpointOn, endpointRegistration, endpointsOfRegistration } from '../../../../src/broker/broker-endpoints.js';
import { parseBrokerConfig } from '../../../../src/broker/config.js';
import { interBrokerListener, resolveListeners } from '../../../../src/broker/listeners.js';

const config = (settings: Record<string, string>) => parseBrokerConfig(settings, 'test');

describe('resolveListeners', () => {
  it('without listeners: one PLAINTEXT listener on the --listen address, advertised as --advertised-host', () => {
    expect(resolveListeners(config({}), { host: '127.0.0.1', port: 9092 }, 'broker-1.example')).toEqual([
      { name: 'PLAINTEXT', securityProtocol: 'PLAINTEXT', host: '127.0.0.1', port: 9092, advertisedHost: 'broker-1.example', advertisedPort: undefined },
    ]);
  });

  it('reads names, protocols (by the map), IPv6 hosts and advertised addresses', () => {
    const specs = resolveListeners(
      config({
        listeners: 'plaintext://127.0.0.1:9092,CLIENT://[::1]:9093,SSL://:9094',
        'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CLIENT:SASL_SSL,SSL:SSL',
        'advertised.listeners': 'CLIENT://kafka.example:19093',
      }),
      undefined,
      'fallback.example',
    );
    expect(specs.map((spec) => [spec.name, spec.securityProtocol, spec.host, spec.port, spec.advertisedHost, spec.advertisedPort])).toEqual([
      ['PLAINTEXT', 'PLAINTEXT', '127.0.0.1', 9092, 'fallback.example', undefined],
      ['CLIENT', 'SASL_SSL', '::1', 9093, 'kafka.example', 19093],
      ['SSL', 'SSL', '', 9094, 'fallback.example', undefined],
    ]);
  });

  it('refuses what Kafka refuses: unmapped names, duplicates, advertised names not listened on, wildcard advertised hosts', () => {
    expect(() => resolveListeners(config({ listeners: 'CLIENT://h:1' }), undefined)).toThrow(/no security protocol/);
    expect(() => resolveListeners(config({ listeners: 'SSL://h:1,SSL://h:2' }), undefined)).toThrow(/twice/);
    expect(() => resolveListeners(config({ listeners: 'SSL://h:1,PLAINTEXT://h:1' }), undefined)).toThrow(/port 1 twice/);
    expect(() => resolveListeners(config({ listeners: 'SSL://h:1', 'advertised.listeners': 'PLAINTEXT://h:2' }), undefined)).toThrow(/not in listeners/);
    expect(() => resolveListeners(config({ listeners: 'SSL://h:1', 'advertised.listeners': 'SSL://0.0.0.0:1' }), undefined)).toThrow(/reach/);
    expect(() => resolveListeners(config({ listeners: 'SSL:/h:1' }), undefined)).toThrow(/NAME:\/\/host:port/);
    expect(() => resolveListeners(config({}), undefined)).toThrow(/--listen/);
  });

  it('picks the inter-broker listener: the named one, else the first PLAINTEXT one, else the first', () => {
    const specs = resolveListeners(config({ listeners: 'SSL://h:1,PLAINTEXT://h:2' }), undefined);
    expect(interBrokerListener(config({}), specs).name).toBe('PLAINTEXT');
    expect(interBrokerListener(config({ 'inter.broker.listener.name': 'ssl' }), specs).name).toBe('SSL');
    expect(interBrokerListener(config({}), specs.slice(0, 1)).name).toBe('SSL');
    expect(() => interBrokerListener(config({ 'inter.broker.listener.name': 'OTHER' }), specs)).toThrow(/not in listeners/);
  });
});

describe('registration endpoints', () => {
  const endpoints = [
    { listenerName: 'PLAINTEXT', securityProtocol: 'PLAINTEXT' as const, host: 'h1', port: 9092 },
    { listenerName: 'CLIENT', securityProtocol: 'SASL_SSL' as const, host: '::1', port: 9093 },
  ];

  it("round-trips through Kafka's endpoints and listener_security_protocol_map", () => {
    const registration = { host: 'h1', port: 9092, ...endpointRegistration(endpoints) };
    expect(registration.endpoints).toEqual(['PLAINTEXT://h1:9092', 'CLIENT://[::1]:9093']);
    expect(registration.listener_security_protocol_map).toEqual({ PLAINTEXT: 'PLAINTEXT', CLIENT: 'SASL_SSL' });
    expect(endpointsOfRegistration(JSON.parse(JSON.stringify(registration)) as Record<string, unknown>)).toEqual(endpoints);
  });

  it('reads a registration from before listeners as one PLAINTEXT endpoint, and skips entries it cannot read', () => {
    expect(endpointsOfRegistration({ host: 'old', port: 9092 })).toEqual([{ listenerName: 'PLAINTEXT', securityProtocol: 'PLAINTEXT', host: 'old', port: 9092 }]);
    expect(endpointsOfRegistration({ host: 'h', port: 1, endpoints: ['SSL://h:2', 42, 'weird', 'X://h:3'], listener_security_protocol_map: { X: 'NOPE' } })).toEqual([
      { listenerName: 'SSL', securityProtocol: 'SSL', host: 'h', port: 2 },
    ]);
  });

  it('finds a broker on a listener, or not at all', () => {
    expect(endpointOn({ host: 'h1', port: 9092, endpoints }, 'CLIENT')?.port).toBe(9093);
    expect(endpointOn({ host: 'h1', port: 9092, endpoints }, 'SSL')).toBeUndefined();
    expect(endpointOn({ host: 'h1', port: 9092 }, 'PLAINTEXT')?.port).toBe(9092);
  });
});
