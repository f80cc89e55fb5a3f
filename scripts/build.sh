#!/usr/bin/env bash
# Build kopt (library, CLI, tests) into ./build. Installs the Debian packages it needs when
# they are missing and it may (root with apt-get). The CUDA toolkit (headers; nvcc for
# host-mode candidates) is expected under /usr/local/cuda or $CUDA_HOME.
# Usage: scripts/build.sh [extra cmake args], e.g. -DKOPT_SANITIZE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for pkg in cmake pkg-config libjansson-dev libsqlite3-dev libssl-dev libcurl4-openssl-dev \
    libmicrohttpd-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "build.sh: installing ${need[*]}" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "build.sh: missing packages: ${need[*]} (install them and run again)" >&2
    exit 1
  fi
fi
cmake -S . -B build -DKOPT_WERROR=ON "$@" >/dev/null
cmake --build build -j"$(nproc)"
