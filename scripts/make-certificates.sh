#!/usr/bin/env bash
# Test and demo certificates for TLS listeners, made with the openssl CLI.
#
#   scripts/make-certificates.sh <dir>
#
# Writes into <dir> (created if missing):
#   ca.pem              the CA certificate: the truststore (ssl.truststore.location) of brokers and clients
#   ca.key              the CA's private key (kept so the set can be extended; never given to a broker)
#   broker.pem          broker private key + certificate + CA: ssl.keystore.location's PEM format
#                       (subject CN=localhost, SAN DNS:localhost and IP:127.0.0.1, server and client use)
#   broker.key/.crt     the same key, and the certificate + CA, as two files (librdkafka, openssl s_client)
#   client.pem          client private key + certificate (CN=client,O=Tributary) + CA
#   client.key/.crt     the same, as two files
#   broker-expired.pem  a broker key + certificate (same SAN) whose validity ended a day before it began
#
# Keys are EC P-256, unencrypted PKCS#8. Idempotent: when the full set is already there nothing is
# rewritten, so a broker or a test can keep using the files. Quiet unless openssl fails.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 <dir>" >&2
  exit 2
fi
dir=$1
mkdir -p "$dir"
cd "$dir"

outputs=(ca.pem ca.key broker.pem broker.key broker.crt client.pem client.key client.crt broker-expired.pem)
complete=1
for f in "${outputs[@]}"; do [ -s "$f" ] || complete=0; done
[ "$complete" = 1 ] && exit 0

work=$(mktemp -d "${TMPDIR:-/tmp}/tributary-certs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Runs openssl and shows its chatter only when it fails.
quiet() {
  if ! "$@" >"$work/log" 2>&1; then
    cat "$work/log" >&2
    exit 1
  fi
}

new_key() { quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }

# sign <name> <subject> <days> <extensions>: a key and a CA-signed certificate in $work.
sign() {
  local name=$1 subject=$2 days=$3 extensions=$4
  new_key "$work/$name.key"
  quiet openssl req -new -key "$work/$name.key" -subj "$subject" -out "$work/$name.csr"
  printf '%s\n' "$extensions" >"$work/$name.ext"
  # A negative -days makes notAfter earlier than notBefore: the certificate is already expired.
  quiet openssl x509 -req -in "$work/$name.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days "$days" -sha256 \
    -extfile "$work/$name.ext" -out "$work/$name.crt"
}

new_key "$work/ca.key"
quiet openssl req -x509 -new -key "$work/ca.key" -subj "/O=Tributary/CN=Tributary test CA" -days 3650 -sha256 \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out "$work/ca.pem"

server_ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=DNS:localhost,IP:127.0.0.1"
client_ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"

sign broker "/O=Tributary/CN=localhost" 825 "$server_ext"
sign client "/O=Tributary/CN=client" 825 "$client_ext"
sign broker-expired "/O=Tributary/CN=localhost" -1 "$server_ext"

cat "$work/broker.key" "$work/broker.crt" "$work/ca.pem" >"$work/broker.pem"
cat "$work/broker.crt" "$work/ca.pem" >"$work/broker.chain"
cat "$work/client.key" "$work/client.crt" "$work/ca.pem" >"$work/client.pem"
cat "$work/client.crt" "$work/ca.pem" >"$work/client.chain"
cat "$work/broker-expired.key" "$work/broker-expired.crt" "$work/ca.pem" >"$work/broker-expired.pem"

# Keys stay private to the owner; the files appear under their final names only when complete.
chmod 600 "$work"/*.key "$work"/*.pem
chmod 644 "$work/ca.pem"
install_as() { mv -f "$work/$1" "$2"; }
install_as ca.key ca.key
install_as broker.key broker.key
install_as broker.chain broker.crt
install_as broker.pem broker.pem
install_as client.key client.key
install_as client.chain client.crt
install_as client.pem client.pem
install_as broker-expired.pem broker-expired.pem
install_as ca.pem ca.pem
