#!/usr/bin/env bash
# The one configured build of README's two commands: build/ with the flags CI tests with
# (Release, warnings as errors, unity batches, ccache), so the test command reuses what the
# first command compiled. Arguments are targets (none: everything).
#   bash scripts/build.sh pipescope     # the CLI only (README's first command)
#   bash scripts/build.sh               # everything: libraries, CLI, GUI, tests, benchmarks
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.ccache}"
# Paths relative to the checkout, so a clone in another folder reuses the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# Debug info (the sanitizer build's -g1) makes ccache hash the build folder; a clone
# elsewhere would then miss every object. The folder in the debug info is harmless.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIPESCOPE_WERROR=ON >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
