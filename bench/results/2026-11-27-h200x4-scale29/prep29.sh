#!/usr/bin/env bash
# Issue 29: the three stripped build folders that .carry/scale29.sh times on a 4-GPU machine,
# made here (CPU machine) from clean builds of main and of the two branches:
#   build-main   <- /work/wt29m/build  (main at the branches' base, b09d8fc, detached: the
#                                       main checkout's own build/ holds work in progress)
#   build-depth  <- /work/wt29/build   (branch compile-depth)
#   build-otg    <- /work/wt29b/build  (branch optimize-tune-gpus)
# Each is `cp -a` of the build less what a timing run does not use: object files, Testing/,
# the test binaries (tests/), libkopt.a and CMakeFiles/ (PREP_TESTS=1 keeps tests/ and the
# CTest files, e.g. to run the suite from one of them: ~20 MiB more each); every ELF left is
# `strip --strip-debug`ed. What stays: kopt, kopt-worker, kopt-runtime/ (prebuilt cubins),
# libkopt.so*, CMakeCache.txt (the run script resolves the source folder it names).
# Each worktree's build is brought up to date first (make -j2; PREP_MAKE=0 skips it).
# usage: bash .carry/prep29.sh [DEST]    (DEST default /work/main: the repo root carried)
# then carry: build-main build-depth build-otg .carry/scale29.sh
set -eu
DEST=${1:-/work/main}
declare -A SRC=([build-main]=${MAIN_BUILD:-/work/wt29m/build} [build-depth]=/work/wt29/build
                [build-otg]=/work/wt29b/build)
base=$(git -C /work/main merge-base main compile-depth)
for name in build-main build-depth build-otg; do
  src=${SRC[$name]}
  tree=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$src/CMakeCache.txt")
  head=$(git -C "$tree" rev-parse HEAD)
  case $name in
    build-main) want=$base ;;
    build-depth) want=$(git -C "$tree" rev-parse compile-depth) ;;
    build-otg) want=$(git -C "$tree" rev-parse optimize-tune-gpus) ;;
  esac
  [ "$head" = "$want" ] || { echo "$name: $tree is at ${head:0:7}, not ${want:0:7}" >&2; exit 1; }
  [ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ] ||
    { echo "$name: $tree has uncommitted changes" >&2; exit 1; }
  [ "${PREP_MAKE:-1}" = 1 ] && make -C "$src" -j2 > /dev/null
  # a source newer than the program: the build is not of this commit
  newer=$(cd "$tree" && find src cli include -type f -newer "$src/kopt" | head -3)
  [ -z "$newer" ] || echo "$name: WARNING: newer than $src/kopt: $newer" >&2
  rm -rf "${DEST:?}/$name"
  cp -a "$src" "$DEST/$name"
  find "$DEST/$name" -name '*.o' -delete
  rm -rf "$DEST/$name/Testing" "$DEST/$name/libkopt.a" "$DEST/$name/CMakeFiles"
  if [ "${PREP_TESTS:-0}" != 1 ]; then
    rm -rf "$DEST/$name/tests" "$DEST/$name/CTestTestfile.cmake"
  fi
  find "$DEST/$name" -type f -print0 | while IFS= read -r -d '' f; do
    if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
      strip --strip-debug "$f" 2>/dev/null || true
    fi
  done
  echo "$name: ${head:0:7} ($(git -C "$tree" log -1 --format=%s "$head" | cut -c1-60)...), $(du -sh "$DEST/$name" | cut -f1)"
done
du -shc "$DEST"/build-main "$DEST"/build-depth "$DEST"/build-otg | tail -1
