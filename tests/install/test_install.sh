#!/usr/bin/env bash
# Install test: `cmake --install` the build into a temporary prefix, check the layout, then
# build tests/install/eval_example.c against the INSTALLED kopt four ways (pkg-config shared
# and --static, find_package(kopt) with kopt::kopt and kopt::kopt_static), run each on an
# example, and compare its verdict with the installed `kopt eval --json` (a GPU: both OK;
# none: both SKIPPED). Each program must find the installed worker, also after the prefix
# is moved. Environment (from tests/CMakeLists.txt): CC, KOPT_TEST_CFLAGS, KOPT_BINDIR,
# KOPT_LIBDIR, KOPT_LIBEXECDIR, KOPT_INCLUDEDIR (relative install dirs), KOPT_BUILD_WORKER.
# KOPT_INSTALL_WORK=DIR: work in DIR and keep it (the prefix and the programs built), so a
# machine without jansson/sqlite3 development files (the GPU machine) can run the programs
# built here against its GPU: there the builds are skipped, saying so, and the programs
# found in DIR are run (bench/gpu_diag.sh, section install).
# usage: test_install.sh BUILD_DIR SOURCE_DIR   (prints "ktest: N passed, M failed")
set -u
BUILD=$(cd "${1:?usage: test_install.sh BUILD_DIR SOURCE_DIR}" && pwd)
SRC=$(cd "${2:?usage: test_install.sh BUILD_DIR SOURCE_DIR}" && pwd)
CC=${CC:-cc}
CFLAGS=${KOPT_TEST_CFLAGS:-}
BINDIR=${KOPT_BINDIR:-bin} LIBDIR=${KOPT_LIBDIR:-lib} LIBEXECDIR=${KOPT_LIBEXECDIR:-libexec}
INCLUDEDIR=${KOPT_INCLUDEDIR:-include}
PROBLEM=$SRC/examples/vector_add
CAND=$PROBLEM/fast.cu

if [ -n "${KOPT_INSTALL_WORK:-}" ]; then
    mkdir -p "$KOPT_INSTALL_WORK" && WORK=$(cd "$KOPT_INSTALL_WORK" && pwd) || exit 1
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/ktest-install-XXXXXX") || exit 1
    trap 'rm -rf "$WORK"' EXIT
fi
export KOPT_CACHE_DIR="$WORK/cache"
unset KOPT_WORKER KOPT_INCLUDE_DIR
P=$WORK/prefix
OUT=$WORK/out

passed=0 failed=0 case_failed=0 current=""
begin() { current=$1; case_failed=0; : >"$OUT"; }
fail() { echo "$current: $*" >&2; case_failed=1; }
end() {
    if [ "$case_failed" = 0 ]; then passed=$((passed + 1)); echo "ok   $current"
    else failed=$((failed + 1)); echo "FAIL $current"; echo "---- output:" >&2; cat "$OUT" >&2; fi
}
# run CMD...: output (stdout and stderr) to $OUT, status in $rc
run() { "$@" >"$OUT" 2>&1; rc=$?; }
expect_rc() { [ "$rc" = "$1" ] || fail "exit status $rc, expected $1"; }
expect_out() { grep -q -E -- "$1" "$OUT" || fail "output lacks /$1/"; }
field() { sed -n "s/^$1 //p" "$OUT" | head -1; }

has_gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then has_gpu=1; fi
want=SKIPPED
[ "$has_gpu" = 1 ] && want=OK
echo "path: $([ "$has_gpu" = 1 ] && echo "GPU: expecting verdict OK" || echo "no GPU: expecting verdict SKIPPED")"

begin "cmake --install into a temporary prefix"
run cmake --install "$BUILD" --prefix "$P"
expect_rc 0
for f in "$BINDIR/kopt" "$LIBEXECDIR/kopt/kopt-worker" "$LIBDIR/libkopt.a" "$LIBDIR/libkopt.so" \
         "$INCLUDEDIR/kopt/kopt.h" "$INCLUDEDIR/kopt/worker.h" "$INCLUDEDIR/kopt/candidate.h" \
         "$LIBDIR/pkgconfig/kopt.pc" "$LIBDIR/cmake/kopt/koptConfig.cmake" \
         "$LIBDIR/cmake/kopt/koptConfigVersion.cmake" "$LIBDIR/cmake/kopt/koptTargets.cmake"; do
    [ -e "$P/$f" ] || fail "$f is not installed"
done
[ -x "$P/$LIBEXECDIR/kopt/kopt-worker" ] || fail "kopt-worker is not executable"
if [ -f "$BUILD/kopt-runtime/source.sha256" ]; then   # built with nvcc: the prebuilt kernels
    for f in "$BUILD"/kopt-runtime/*.cubin "$BUILD/kopt-runtime/source.sha256"; do
        [ -e "$P/$LIBEXECDIR/kopt/kopt-runtime/$(basename "$f")" ] ||
            fail "kopt-runtime/$(basename "$f") is not installed"
    done
fi
readelf -d "$P/$LIBDIR/libkopt.so" 2>/dev/null | grep -q 'SONAME.*\[libkopt\.so\.[0-9]' ||
    fail "libkopt.so has no versioned SONAME"
end

begin "the installed kopt and kopt-worker"
run "$P/$LIBEXECDIR/kopt/kopt-worker" --version
expect_rc 0
expect_out "^kopt-worker [0-9]+\.[0-9]+"
run "$P/$BINDIR/kopt" --version
expect_rc 0
expect_out "^worker $P/$BINDIR/kopt \(the kopt program\)$"
end

# the verdict the installed CLI gives for the pair
begin "installed kopt eval --json"
run "$P/$BINDIR/kopt" eval "$PROBLEM" "$CAND" --json --no-store
cli_verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$OUT" 2>/dev/null)
[ "$cli_verdict" = "$want" ] || fail "kopt eval's verdict is '$cli_verdict', expected $want"
end

# the installed PyTorch worker locks a ModelNew down with the installed libkopt.so (found
# from the kopt program: <bindir>/../lib), on the CPU build of PyTorch
if python3 -c 'import torch' >/dev/null 2>&1; then
    begin "installed PyTorch worker: a ModelNew locked down by the installed libkopt"
    run "$P/$BINDIR/kopt" kb import "$SRC/bench/kernelbench/problems/3_scale_add.py" \
        --out "$WORK/kbp"
    run "$P/$BINDIR/kopt" --version
    grep -qx "torch worker $(cd "$P/$LIBEXECDIR/kopt" && pwd -P)/kopt_torch_worker.py" "$OUT" ||
        fail "the installed kopt does not find the installed PyTorch worker: $(grep torch "$OUT")"
    KOPT_TORCH_DEVICE=cpu run "$P/$BINDIR/kopt" eval "$WORK/kbp/3_scale_add" "$SRC/tests/kb_sandbox/honest.py" \
        --size batch=8 --size width=8 --trials 1 --no-time --json --no-store
    python3 -c '
import json, os, sys
d = json.load(open(sys.argv[1]))
s = d["sandbox"]
assert d["verdict"] == "OK" and s["locked"], (d["verdict"], s)
assert s["lib"] == os.path.realpath(sys.argv[2]), s
' "$OUT" "$P/$LIBDIR/libkopt.so.0" >>"$OUT" 2>&1 || fail "not OK and locked down by the installed libkopt"
    end
else
    echo "skipped: no torch: the installed PyTorch worker's lockdown is not run"
fi

export PKG_CONFIG_PATH=$P/$LIBDIR/pkgconfig
can_build=1
if ! pkg-config --exists jansson sqlite3 2>/dev/null; then
    can_build=0
    if [ -x "$WORK/pc_shared" ] && [ -x "$WORK/consumer/eval_example_static" ]; then
        echo "skipped: building against the installed kopt (no jansson/sqlite3 development files here); running the programs built earlier in $WORK"
    else
        echo "skipped: no jansson/sqlite3 development files here: no program was built against the installed kopt"
        echo "ktest: $passed passed, $failed failed"
        [ "$failed" = 0 ]; exit
    fi
fi
if [ "$can_build" = 1 ]; then
begin "build with pkg-config (libkopt.so and libkopt.a)"
# shellcheck disable=SC2046
run $CC $CFLAGS "$SRC/tests/install/eval_example.c" -o "$WORK/pc_shared" \
    $(pkg-config --cflags --libs kopt) -Wl,-rpath,"$(pkg-config --variable=libdir kopt)"
expect_rc 0
readelf -d "$WORK/pc_shared" 2>/dev/null | grep -q 'NEEDED.*libkopt\.so' ||
    fail "pc_shared does not use libkopt.so"
mkdir -p "$WORK/static" && ln -sf "$P/$LIBDIR/libkopt.a" "$WORK/static/libkopt.a"
# -L to a folder holding only libkopt.a: -lkopt links it; the rest comes from --static
# shellcheck disable=SC2046
run $CC $CFLAGS "$SRC/tests/install/eval_example.c" -o "$WORK/pc_static" -L"$WORK/static" \
    $(pkg-config --cflags --libs --static kopt)
expect_rc 0
readelf -d "$WORK/pc_static" 2>/dev/null | grep -q 'NEEDED.*libkopt' &&
    fail "pc_static depends on libkopt.so"
end

begin "build with find_package(kopt)"
run cmake -S "$SRC/tests/install/consumer" -B "$WORK/consumer" -DCMAKE_PREFIX_PATH="$P" \
    -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_BUILD_TYPE=Release
expect_rc 0
[ "$rc" = 0 ] && run cmake --build "$WORK/consumer"
expect_rc 0
end
fi

# run PROGRAM EXPECTED_WORKER_LINE_REGEX
check_program() {
    begin "$(basename "$1"): worker and verdict"
    run "$1" "$PROBLEM" "$CAND"
    expect_rc 0
    expect_out "$2"
    v=$(field verdict)
    echo "  $(basename "$1"): $(field worker); verdict $v (kopt eval: $cli_verdict)"
    [ "$v" = "$cli_verdict" ] || fail "verdict '$v', kopt eval --json says '$cli_verdict'"
    end
}
installed="^worker $P/$LIBEXECDIR/kopt/kopt-worker"
# a program with libkopt.a finds the worker compiled in: the configured prefix's, when
# installed there, or the build tree's (this prefix is not the configured one)
static_worker="^worker ($P/$LIBEXECDIR/kopt/kopt-worker \(install prefix\)|$KOPT_BUILD_WORKER \(build tree\))$"
check_program "$WORK/pc_shared" "$installed \(beside libkopt\)$"
check_program "$WORK/pc_static" "$static_worker"
check_program "$WORK/consumer/eval_example_shared" "$installed \(beside libkopt\)$"
check_program "$WORK/consumer/eval_example_static" "$static_worker"

begin "KOPT_WORKER names the worker"
KOPT_WORKER=$P/$LIBEXECDIR/kopt/kopt-worker run "$WORK/pc_static" "$PROBLEM" "$CAND"
expect_rc 0
expect_out "$installed \(KOPT_WORKER\)$"
end

begin "a moved prefix still finds its worker and headers"
mv "$P" "$WORK/moved"
LD_LIBRARY_PATH=$WORK/moved/$LIBDIR run "$WORK/pc_shared" "$PROBLEM" "$CAND"
expect_rc 0
expect_out "^worker $WORK/moved/$LIBEXECDIR/kopt/kopt-worker \(beside libkopt\)$"
[ "$(field verdict)" = "$cli_verdict" ] || fail "verdict '$(field verdict)' after the move"
LD_LIBRARY_PATH=$WORK/moved/$LIBDIR run "$WORK/pc_shared" "$SRC/examples/layernorm" \
    "$SRC/examples/layernorm/host_two_kernels.cu"
expect_rc 0
expect_out "host mode: kopt headers from $WORK/moved/$INCLUDEDIR/kopt$"
run "$WORK/moved/$BINDIR/kopt" --version
expect_out "^worker $WORK/moved/$BINDIR/kopt \(the kopt program\)$"
# the kopt program has libkopt built in: it finds the prebuilt runtime kernels from its own
# folder (before, a moved install compiled them with NVRTC and the toolkit's headers)
if [ -d "$WORK/moved/$LIBEXECDIR/kopt/kopt-runtime" ]; then
    expect_out "^runtime kernels $(cd "$WORK/moved/$LIBEXECDIR/kopt/kopt-runtime" && pwd -P)$"
fi
mv "$WORK/moved" "$P"
end

echo "ktest: $passed passed, $failed failed"
[ "$failed" = 0 ]
