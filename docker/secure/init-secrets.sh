#!/usr/bin/env bash
# One-shot start step of compose.secure.yaml (debian:bookworm-slim, as root): certificates and
# random passwords in the volumes the services share. Does nothing for what already exists, so a
# restart keeps them; remove the volumes (`down -v`) for new ones.
#
#   /ca       scripts/make-certificates.sh's set, with the CA's key: mounted by this step only
#   /tls      ca.pem (everyone's truststore) and services.pem (key + chain, signed by that CA, with
#             SANs for every service name, localhost and 127.0.0.1)
#   /secrets  <name>-password for the SASL users (broker, mirror, etl, producer) and the registry users
#             (registry-admin, registry-writer, registry-reader), registry-<role>.user-info (user:password)
#   /redis    redis.conf with requirepass (readable by the redis image's own user only through its volume)
set -euo pipefail
# The folders can be moved for a dry run outside a container.
ca=${CA_DIR:-/ca}
tls=${TLS_DIR:-/tls}
secrets=${SECRETS_DIR:-/secrets}
redis=${REDIS_CONF_DIR:-/redis}
scripts=${SCRIPTS_DIR:-/opt/tributary/scripts}

if ! command -v openssl >/dev/null; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends openssl >/dev/null
fi

# The CA (and the repository's test certificates); that script keeps the CA key for this.
"$scripts/make-certificates.sh" "$ca"
if [ ! -s "$tls/services.pem" ]; then
  work=$(mktemp -d)
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/services.key" 2>/dev/null
  openssl req -new -key "$work/services.key" -subj "/O=Tributary/CN=tributary-services" -out "$work/services.csr"
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth,clientAuth" \
    "subjectAltName=DNS:online-broker-1,DNS:online-broker-2,DNS:offline-broker,DNS:registry,DNS:localhost,IP:127.0.0.1" >"$work/services.ext"
  openssl x509 -req -in "$work/services.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
    -days 825 -sha256 -extfile "$work/services.ext" -out "$work/services.crt" 2>/dev/null
  cat "$work/services.key" "$work/services.crt" "$ca/ca.pem" >"$tls/services.pem.new"
  cp "$ca/ca.pem" "$tls/ca.pem"
  mv "$tls/services.pem.new" "$tls/services.pem"
  rm -rf "$work"
fi

for name in broker mirror etl producer registry-admin registry-writer registry-reader; do
  [ -s "$secrets/$name-password" ] || openssl rand -hex 24 >"$secrets/$name-password"
done
for role in admin writer reader; do
  printf '%s:%s\n' "$role" "$(cat "$secrets/registry-$role-password")" >"$secrets/registry-$role.user-info"
done
if [ ! -s "$redis/redis.conf" ]; then
  openssl rand -hex 24 >"$secrets/redis-password"
  # BullMQ needs noeviction: an evicted job key is a lost job.
  printf '%s\n' "requirepass $(cat "$secrets/redis-password")" "maxmemory-policy noeviction" "appendonly yes" "dir /data" >"$redis/redis.conf"
fi

# The Tributary image runs as node (uid 1000); the redis image as redis (uid 999).
chown -R 1000:1000 "$tls" "$secrets"
chmod 600 "$secrets"/* "$tls/services.pem"
chmod 644 "$tls/ca.pem"
chown -R 999:999 "$redis"
chmod 600 "$redis/redis.conf"
echo "certificates in $tls, passwords in $secrets"
