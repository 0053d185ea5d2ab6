#!/usr/bin/env bash
# A throw-away PostgreSQL server for the history tests, run by an unprivileged user (postgres) in a
# folder of its own, reachable only through a Unix socket in that folder, password required.
#
#   bash .ci/postgres.sh start DIR   installs Debian's postgresql when missing (as root), starts the
#                                    server in DIR and prints its URL (with the password: keep it out
#                                    of logs; the tests mask it)
#   bash .ci/postgres.sh stop DIR    stops the server and removes DIR (no error when none runs)
set -euo pipefail
command=${1:?start or stop}
dir=${2:?a folder for the server}

bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

case $command in
start)
  if [ -z "$(bindir)" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  bin=$(bindir)
  mkdir -p "$dir"
  password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  printf '%s\n' "$password" >"$dir/pwfile"
  chown -R postgres: "$dir"
  chmod 700 "$dir"
  runuser -u postgres -- "$bin/initdb" -D "$dir/data" -U kernelperf --pwfile="$dir/pwfile" \
    --auth=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log"
  rm -f "$dir/pwfile"
  # No TCP listener: the socket lives in DIR, so two CI runs on one machine never meet.
  runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -k $dir -c max_connections=100 -c fsync=off" start >/dev/null
  PGPASSWORD=$password "$bin/createdb" -h "$dir" -U kernelperf kernelperf
  echo "postgresql://kernelperf:$password@/kernelperf?host=$dir"
  ;;
stop)
  bin=$(bindir)
  if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
    runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2
  exit 2
  ;;
esac
