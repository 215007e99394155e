#!/usr/bin/env bash
# profile -> simulate -> run for the small GPT-like model, back to back, for K = 1, 2, 4:
# prints predicted and measured step time (median of the measured steps) and the error.
# Usage: benchmarks/timing_check.sh [M] [microbatch-size] [steps]   (from the repository root)
set -euo pipefail
M=${1:-8}; B=${2:-4}; STEPS=${3:-6}
BIN=build/bin/pipescope
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
$BIN profile --model models/gpt-tiny.json --batch-sizes "$B" -o "$TMP/profile.json"
printf "%-3s %-6s %12s %12s %9s\n" K sched "predicted ms" "measured ms" error
for K in 1 2 4; do
  $BIN simulate --profile "$TMP/profile.json" -K "$K" -M "$M" --microbatch-size "$B" -o "$TMP/p.json" > /dev/null
  $BIN run --profile "$TMP/profile.json" -K "$K" -M "$M" --microbatch-size "$B" --steps "$STEPS" -o "$TMP/m.json" > /dev/null
  /usr/bin/python3 - "$K" "$TMP/p.json" "$TMP/m.json" <<'PY'
import json, sys
k, p, m = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
a, b = p["step_time_ms"], m["step_time_ms"]
print(f"{k:<3} {p['schedule']:<6} {a:12.2f} {b:12.2f} {100 * (b - a) / a:+8.1f}%")
PY
done
