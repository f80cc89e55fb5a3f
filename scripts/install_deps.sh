#!/usr/bin/env bash
# The Debian packages kopt's build needs: installed when missing and this may (root with
# apt-get), else a message naming them and exit 1. Used by scripts/build.sh and
# scripts/build_wheel.sh; usage: scripts/install_deps.sh CALLER_NAME
set -euo pipefail
who=${1:-install_deps.sh}
need=()
for pkg in cmake pkg-config libjansson-dev libsqlite3-dev libssl-dev libcurl4-openssl-dev \
    libmicrohttpd-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "$who: installing ${need[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "$who: missing packages: ${need[*]} (install them and run again)" >&2
  exit 1
fi
