#!/usr/bin/env bash
# profile -> simulate -> run for the small GPT-like model, for K = 1, 2, 4, repeated for
# ROUNDS rounds (a fresh profile each round). Prints each round's predicted and measured
# step time (the run's median step) and error, then per K the median error over rounds
# and the median of (error at K) - (error at K = 1) within a round: both runs of a round
# share one profile, so that difference cancels what the profile caught of the machine's
# slow or fast spell and leaves what pipelining itself adds. "replayed" is the simulator fed
# with the run's measured mean op times (run --compare): measured vs replayed is what the
# pipeline adds to the op times (waits, transfers, executor overhead, varying ops).
# Usage: benchmarks/timing_check.sh [ROUNDS] [M] [microbatch-size] [steps] [extra run options...]
#        (from the repository root; e.g. benchmarks/timing_check.sh 5 8 4 11 --wait block;
#        PROFILE_ARGS="--statistic median" benchmarks/timing_check.sh passes options to profile)
set -euo pipefail
ROUNDS=${1:-5}; M=${2:-8}; B=${3:-4}; STEPS=${4:-11}
shift $(( $# < 4 ? $# : 4 ))
BIN=build/bin/pipescope
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  $BIN profile --model models/gpt-tiny.json --batch-sizes "$B" ${PROFILE_ARGS:-} -o "$TMP/profile.json" 2> "$TMP/profile.log"
  for K in 1 2 4; do
    $BIN run --profile "$TMP/profile.json" -K "$K" -M "$M" --microbatch-size "$B" --steps "$STEPS" "$@" \
      --compare > "$TMP/run.txt"
    python3 - "$r" "$K" "$TMP/run.txt" >> "$TMP/rows" <<'PY'
import sys
r, k, text = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().splitlines()
row = lambda name: next(l for l in text if l.startswith(name + " ")).split()
predicted, measured = row("step_time_ms")[1:3]
replayed = row("step_time_ms, replayed")[2]
print(r, k, predicted, measured, replayed)
PY
  done
  echo "round $r done ($(grep -o 'typically [0-9]*%' "$TMP/profile.log" | head -1) profile timing spread)" >&2
done
python3 - "$TMP/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
err = {(int(r), int(k)): 100 * (float(m) - float(p)) / float(p) for r, k, p, m, _ in rows}
print(f"{'round':>5} {'K':>2} {'predicted ms':>13} {'measured ms':>12} {'error':>8} {'replayed ms':>12} {'pipeline adds':>14}")
for r, k, p, m, rp in rows:
    print(f"{r:>5} {k:>2} {float(p):13.1f} {float(m):12.1f} {err[(int(r), int(k))]:+7.1f}% {float(rp):12.1f}"
          f" {100 * (float(m) - float(rp)) / float(rp):+13.1f}%")
rounds = sorted({r for r, _ in err})
print()
print(f"{'K':>2} {'median error':>13} {'range':>18} {'median (K) - (K=1) in a round':>31}")
for k in sorted({k for _, k in err}):
    e = [err[(r, k)] for r in rounds]
    d = [err[(r, k)] - err[(r, 1)] for r in rounds]
    print(f"{k:>2} {statistics.median(e):+12.1f}% {min(e):+8.1f}%..{max(e):+6.1f}% {statistics.median(d):+30.1f}%")
PY
