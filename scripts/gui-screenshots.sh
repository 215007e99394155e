#!/usr/bin/env bash
# Regenerates the screenshots in docs/ with `pipescope-gui --screenshot` (offscreen).
#   scripts/gui-screenshots.sh [build-dir]      (default: build)
# The K = 64, M = 1024 picture uses a 64-block uniform model on 64 devices (8 per node),
# written to a temporary folder here.
set -euo pipefail
build=${1:-build}
gui="$build/bin/pipescope-gui"
export QT_QPA_PLATFORM=offscreen
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$gui" --screenshot docs/gui.png
"$gui" --screenshot docs/gui-sweep.png --tab sweep --sweep --schedule gpipe --microbatch-size 4
"$gui" --screenshot docs/gui-plans.png --tab plans -M 32
"$gui" --screenshot docs/gui-llm-plans.png --llm-plan tests/data/llm_plan/moe-32gpus-top40.json

# A/B: A = 1F1B, K=4, M=8 with the uniform cut (7, 7, 6, 6 blocks); B = ZB-H1, K=4, M=8, optimal cut.
cat > "$tmp/a.json" <<'JSON'
{"format": "pipescope.plan", "version": 1, "profile": "gpt-1.3b-h200.json",
 "batch_size": 8, "microbatches": 8, "schedule": {"kind": "1f1b", "chunks": 1}, "recompute": false,
 "optimizer": {"state_bytes_per_parameter_byte": 2.0},
 "stages": [{"layers": [0, 7], "devices": [0]}, {"layers": [7, 14], "devices": [1]},
            {"layers": [14, 20], "devices": [2]}, {"layers": [20, 26], "devices": [3]}]}
JSON
"$gui" --screenshot docs/gui-ab.png --tab ab --pin "$tmp/a.json" --schedule zb-h1

# Timelines at scale: K = 64, M = 1024.
python3 - "$tmp" <<'PY'
import json, sys
folder = sys.argv[1]
layers = [{"name": f"block.{i}", "forward_ms": [1.0], "backward_ms": [2.0], "activation_bytes": [268435456],
           "output_bytes": [67108864], "parameter_bytes": 268435456} for i in range(64)]
json.dump({"format": "pipescope.profile", "version": 1, "model": "uniform-64", "device": {"name": "any", "memory_bytes": 141000000000},
           "backend": "analytic", "dtype": "fp32", "batch_sizes": [1], "layers": layers}, open(f"{folder}/p64.json", "w"))
json.dump({"format": "pipescope.hardware", "version": 1, "name": "64 devices, 8 per node", "devices": 64,
           "memory_bytes": 141000000000, "link": {"bandwidth_gb_per_s": 450.0, "latency_us": 5.0},
           "nodes": {"devices_per_node": 8, "link": {"bandwidth_gb_per_s": 50.0, "latency_us": 10.0}}},
          open(f"{folder}/h64.json", "w"))
PY
"$gui" --screenshot docs/gui-k64.png --profile "$tmp/p64.json" --hardware "$tmp/h64.json" -K 64 -M 1024 --partition uniform
