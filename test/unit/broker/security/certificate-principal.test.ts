/** The principal of a client certificate: `User:` + its subject in RFC 2253 order (Kafka's default principal builder). */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { certificatePrincipal, subjectRfc2253 } from '../../../../src/broker/security/certificate-principal.js';
import { CLIENT_CERT_SUBJECT, testCertificates } from '../../../support/certificates.js';

describe('certificatePrincipal', () => {
  it('names the client certificate most specific attribute first', () => {
    const certificate = new X509Certificate(readFileSync(testCertificates().clientCert));
    expect(subjectRfc2253(certificate)).toBe(CLIENT_CERT_SUBJECT);
    expect(certificatePrincipal(certificate)).toBe('User:CN=client,O=Tributary');
  });
});
