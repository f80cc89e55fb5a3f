#!/usr/bin/env bash
# Build kopt with warnings as errors in other configurations than scripts/build.sh's, into
# build-check/<compiler>-<type>[-san]/ (kept, so a second run is incremental). CI runs the
# default (Debug with ASan+UBSan, gcc); --all tries every build type, with and without
# sanitizers, with gcc and clang. Keeps going past errors and lists the failing builds.
# Usage: scripts/check_builds.sh [--all | CC:TYPE[:san] ...]   e.g. clang:Release:san
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --all ]; then
    set --
    for cc in gcc clang; do
        for type in Debug Release RelWithDebInfo MinSizeRel; do
            set -- "$@" "$cc:$type" "$cc:$type:san"
        done
    done
elif [ $# = 0 ]; then
    set -- gcc:Debug:san
fi
mkdir -p build-check
jobs=${KOPT_CHECK_JOBS:-2}
failed=()
for config in "$@"; do
    IFS=: read -r cc type san <<<"$config"
    dir=build-check/$cc-$type${san:+-san}
    sanitize=OFF
    [ -n "$san" ] && sanitize=ON
    echo "check_builds: $config -> $dir" >&2
    start=$SECONDS
    if CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DKOPT_WERROR=ON \
            -DKOPT_SANITIZE=$sanitize >"$dir.log" 2>&1 &&
       cmake --build "$dir" -j"$jobs" -- -k >>"$dir.log" 2>&1; then
        echo "check_builds: $config ok ($((SECONDS - start)) s)" >&2
    else
        failed+=("$config")
        grep -E "error:|warning:|Error " "$dir.log" | sort -u | head -20 >&2
        echo "check_builds: $config FAILED ($((SECONDS - start)) s; log: $dir.log)" >&2
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "check_builds: failing builds: ${failed[*]}" >&2
    exit 1
fi
echo "check_builds: all $# builds ok" >&2
