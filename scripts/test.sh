#!/usr/bin/env bash
# The test command of README.md and CI: install what is missing, build everything
# (CUDA code too when nvcc is present; its GPU tests skip themselves without a GPU),
# run the GoogleTest suites and the Python bridge's pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.ccache}"
# Paths relative to the checkout, so a clone in another folder reuses the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# The sanitizer build has debug info (-g), which makes ccache hash the build folder; a
# clone elsewhere would then miss every object. The folder in the debug info is harmless.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIPESCOPE_WERROR=ON
cmake --build build -j"$(nproc)"
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 300
(cd python && ../.venv/bin/python -m pytest -q -p no:cacheprovider tests)
# The same suites under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/).
bash scripts/sanitize.sh
