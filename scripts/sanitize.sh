#!/usr/bin/env bash
# Builds the library, CLI and tests with AddressSanitizer + UndefinedBehaviorSanitizer
# in build-asan/ and runs the test suite there. Any sanitizer report fails the test
# that triggered it (UBSan is built with -fno-sanitize-recover; ASan halts on error).
#   scripts/sanitize.sh            build + ctest (labels "slow" included)
#   SANITIZE_BUILD_DIR=... scripts/sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SANITIZE_BUILD_DIR:-build-asan}
jobs=${JOBS:-2}

# What sanitizers find bugs in: the libraries, their tests, the readers' fuzz corpora
# replayed by ctest, the executor and the MPI runs. Not built here: the GUI (its models are
# the planner's and sim's, tested here; the widgets add Qt's own code), the benchmarks and
# the CUDA backend (no GPU to run it). -O1 -g1: ASan's recommended optimisation, and line
# tables for its stack traces without full debug info (compile and link time in docs/ci.md).
cmake -S . -B "$build" -G Ninja -DPIPESCOPE_SANITIZE=ON -DPIPESCOPE_WERROR="${PIPESCOPE_WERROR:-ON}" -DPIPESCOPE_BUILD_GUI=OFF \
  -DPIPESCOPE_BUILD_BENCHMARKS=OFF -DPIPESCOPE_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1 -DNDEBUG"
cmake --build "$build" -j"$jobs"

# detect_leaks: a leak is a failure. allocator_may_return_null: an absurd allocation
# becomes std::bad_alloc (which the code must handle) instead of an ASan abort.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The tests that run an exported file in the project's Python (torch's own schedule
# classes, DeepSpeed's config) spend their time in Python, which is not instrumented:
# they skip here, saying so, and run in the Release ctest and pytest.
export PIPESCOPE_SKIP_PYTHON=1
ctest --test-dir "$build" --output-on-failure -j"$jobs" -E '^ExecMpi[.]' "${@}"
# Open MPI leaves its own allocations (in plugins it has unloaded, so they cannot be
# named in a suppression file) at exit: the MPI runs are checked for memory errors and
# undefined behaviour, not for leaks.
ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}" \
  ctest --test-dir "$build" --output-on-failure -j"$jobs" -R '^ExecMpi[.]' "${@}"
