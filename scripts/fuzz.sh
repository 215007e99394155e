#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs each for
# SECONDS on a working copy of its seed corpus, after replaying the kept crash inputs
# in fuzz/regressions/<target>/. New crash inputs land in build-fuzz/artifacts/<target>/.
#   scripts/fuzz.sh SECONDS [TARGET ...]     targets: profile hardware plan job layout report schedule simulate cli hf_config llm_plan runtime trace
#   FUZZ_JOBS=2 scripts/fuzz.sh 600          runs two targets at once (default 1)
# Exit status: 0 when no target found anything, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${1:?usage: scripts/fuzz.sh SECONDS [TARGET ...]}
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(profile hardware plan job layout report schedule simulate cli hf_config llm_plan runtime trace)
jobs=${FUZZ_JOBS:-1}
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}

# Debian 12's clang-14 package installs clang-14 / clang++-14; the unversioned names come
# with the `clang` package. Either will do: apt-get install -y clang-14 libclang-rt-14-dev
cxx=$(command -v clang++ || command -v clang++-14 || true)
cc=$(command -v clang || command -v clang-14 || true)
[ -n "$cxx" ] && [ -n "$cc" ] || { echo "fuzz.sh: needs clang (apt-get install -y clang-14 libclang-rt-14-dev)" >&2; exit 2; }
CC=$cc CXX=$cxx cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPIPESCOPE_BUILD_FUZZERS=ON -DPIPESCOPE_BUILD_TESTS=OFF -DPIPESCOPE_BUILD_GUI=OFF \
  -DPIPESCOPE_BUILD_BENCHMARKS=OFF -DPIPESCOPE_WITH_CUDA=OFF -DPIPESCOPE_WITH_MPI=OFF >/dev/null
cmake --build "$build" -j2 --target $(printf 'fuzz_%s ' "${targets[@]}")

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local t=$1 bin=$build/bin/fuzz_$1 dict=$root/fuzz/json.dict
  [ "$t" = cli ] && dict=$root/fuzz/cli.dict
  local work=$build/corpus/$t art=$build/artifacts/$t log=$build/logs/$t.log
  mkdir -p "$work" "$art" "$(dirname "$log")"
  if compgen -G "$root/fuzz/regressions/$t/*" >/dev/null; then
    "$bin" -runs=0 "$root"/fuzz/regressions/$t/* >"$log.regressions" 2>&1 ||
      { echo "fuzz_$t: a kept regression input fails again (see $log.regressions)"; return 1; }
  fi
  # -rss_limit_mb: a reader that allocates without bound is a finding, not an OOM kill.
  local rc=0
  "$bin" "$work" "$root/fuzz/corpus/$t" -dict="$dict" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$art/" >"$log" 2>&1 || rc=$?
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  echo "fuzz_$t: ${seconds}s, $execs execs, exit $rc, $(ls "$art" | wc -l) artifacts (log $log)"
  return $rc
}

status=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
