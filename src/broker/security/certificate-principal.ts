/**
 * The principal of a TLS client that presented a certificate: `User:` + the certificate's subject
 * as an RFC 2253 string, most specific attribute first, as Kafka's default principal builder
 * writes it (`X500Principal.getName()`): subject `/O=Tributary/CN=client` → `User:CN=client,O=Tributary`.
 *
 * Node prints the subject one RDN per line, in certificate order, values already escaped the RFC
 * 2253 way (`,` `+` `"` `\` `<` `>` `;` and leading `#`/space), multi-valued RDNs joined by
 * " + ". Attribute names are OpenSSL's short names (CN, O, OU, C, ST, L, DC, UID, emailAddress);
 * Java writes some of the rarer ones (emailAddress) as an OID instead, so ACLs for such subjects
 * must be written the way this function prints them.
 */
import type { X509Certificate } from 'node:crypto';

export function subjectRfc2253(certificate: X509Certificate): string {
  return certificate.subject
    .split('\n')
    .filter((rdn) => rdn !== '')
    .reverse()
    .map((rdn) => rdn.split(' + ').join('+'))
    .join(',');
}

export function certificatePrincipal(certificate: X509Certificate): string {
  return `User:${subjectRfc2253(certificate)}`;
}
