#!/usr/bin/env bash
# Builds the executor and its tests with ThreadSanitizer in build-tsan/ and runs the
# tests that drive the threaded transport (one thread per stage or replica, every schedule,
# the replicas' all-reduce, faults). Any data race reported fails the run (halt_on_error).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TSAN_BUILD_DIR:-build-tsan}
cmake -S . -B "$build" -G Ninja -DPIPESCOPE_SANITIZE_THREAD=ON -DPIPESCOPE_BUILD_GUI=OFF \
  -DPIPESCOPE_BUILD_BENCHMARKS=OFF -DPIPESCOPE_WITH_CUDA=OFF -DPIPESCOPE_WITH_MPI=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j"${JOBS:-2}" --target exec_tests
# OpenBLAS keeps its own thread pool; one BLAS thread per worker keeps the races TSan
# reports to our code.
export OPENBLAS_NUM_THREADS=1
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
"$build/bin/exec_tests" --gtest_filter='ExecPipeline.*:ExecFaults.*:ExecReplicas.*' "$@"
