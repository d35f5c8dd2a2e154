#!/bin/sh
# One-shot start step of compose.secure.yaml (the Tributary image): the SASL/SCRAM users of both
# clusters in ZooKeeper (`tributary users add`, idempotent: it sets the same password again) and
# the registry's users file (`tributary registry user-line`, passwords from /etc/tributary/secrets).
set -eu
secrets=/etc/tributary/secrets

for chroot in online offline; do
  for user in broker mirror etl producer; do
    tributary users add "$user" --zookeeper "zookeeper:2181/$chroot" --mechanism SCRAM-SHA-512 --mechanism SCRAM-SHA-256 \
      --password-file "$secrets/$user-password"
  done
done

users="$secrets/registry-users"
: >"$users.new"
for role in admin writer reader; do
  case "$role" in reader) grant=read-only ;; *) grant=$role ;; esac
  tributary registry user-line "$role" --role "$grant" <"$secrets/registry-$role-password" >>"$users.new"
done
chmod 600 "$users.new"
mv "$users.new" "$users"
echo "SASL users in /online and /offline; registry users in $users"
