#!/usr/bin/env bash
# The test command of README.md and CI: install what is missing, build everything in the
# build/ that README's first command configured (scripts/build.sh; CUDA code too when nvcc
# is present, its GPU tests skip themselves without a GPU), run the GoogleTest suites and
# the Python bridge's pytest suite, then the suites again under the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time goes to the log, so a slow CI run says where its minutes went.
t0=$(date +%s)
stamp() { echo "== test.sh: $1 done at +$(( $(date +%s) - t0 )) s =="; }
bash scripts/install-deps.sh
stamp install-deps
bash scripts/build.sh
stamp build
# The Python suite waits on subprocesses and torch's gloo more than it computes (12 min
# wall, 6 min CPU here): it starts as soon as the CLI it runs is built and runs beside
# ctest and the sanitizer pass, its output kept and printed when all are done.
pylog=$(mktemp)
(cd python && ../.venv/bin/python -m pytest -q -p no:cacheprovider tests) > "$pylog" 2>&1 &
pytest_pid=$!
export QT_QPA_PLATFORM=offscreen
ctest_rc=0
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 300 || ctest_rc=$?
stamp ctest
# The same suites under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/), with
# the compiler cache settings of scripts/build.sh.
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.ccache}" CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" \
       CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
sanitize_rc=0
bash scripts/sanitize.sh || sanitize_rc=$?
stamp "the sanitizer pass"
pytest_rc=0
wait "$pytest_pid" || pytest_rc=$?
stamp pytest
echo "== the Python bridge's pytest suite (ran beside ctest and the sanitizer pass) =="
cat "$pylog"
rm -f "$pylog"
[ "$ctest_rc" -eq 0 ] || { echo "test.sh: the GoogleTest suites failed (exit $ctest_rc)" >&2; exit "$ctest_rc"; }
[ "$sanitize_rc" -eq 0 ] || { echo "test.sh: the sanitizer suites failed (exit $sanitize_rc)" >&2; exit "$sanitize_rc"; }
[ "$pytest_rc" -eq 0 ] || { echo "test.sh: the pytest suite failed (exit $pytest_rc)" >&2; exit "$pytest_rc"; }
