/**
 * SaslHandshake and SaslAuthenticate as the router sees them: only once a connection is past
 * authentication, or on a listener without SASL. The exchange itself runs before the router
 * (security/authenticator.ts); here, as in Kafka, both are answered ILLEGAL_SASL_STATE, and the
 * handshake lists the mechanisms of the listener the request came in on (none without SASL).
 */
import { SaslAuthenticateApi, type SaslAuthenticateRequest, type SaslAuthenticateResponse } from '../../protocol/apis/sasl-authenticate.js';
import { SaslHandshakeApi, type SaslHandshakeRequest, type SaslHandshakeResponse } from '../../protocol/apis/sasl-handshake.js';
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import type { ApiHandler } from '../router.js';
import { authenticateError, handshakeError } from '../security/authenticator.js';

export function saslHandshakeHandler(mechanismsOf: (listenerName: string) => readonly string[]): ApiHandler<SaslHandshakeRequest, SaslHandshakeResponse> {
  return {
    api: SaslHandshakeApi,
    async handle(_request, _version, context) {
      return handshakeError(KafkaErrorCode.ILLEGAL_SASL_STATE, mechanismsOf(context.identity.listenerName));
    },
  };
}

export function saslAuthenticateHandler(): ApiHandler<SaslAuthenticateRequest, SaslAuthenticateResponse> {
  return {
    api: SaslAuthenticateApi,
    async handle(_request, _version, context) {
      const sasl = context.identity.securityProtocol === 'SASL_PLAINTEXT' || context.identity.securityProtocol === 'SASL_SSL';
      return authenticateError(
        KafkaErrorCode.ILLEGAL_SASL_STATE,
        sasl ? 'SaslAuthenticate request received after successful authentication' : `listener ${context.identity.listenerName} does not use SASL`,
      );
    },
  };
}
