#!/usr/bin/env bash
# The CUDA backend's validation on a machine with a GPU, in one command:
#   scripts/gpu-check.sh            (writes under $OUT, default ./gpu-check-out)
# On the lent H200 (no apt there): first, here, `scripts/gpu-deps.sh download`, then run
# this with `.deps` in the device tool's carry list.
# configures and builds for sm_90, runs the `gpu` tests, measures the bf16 GEMM of the
# largest layer against the best cuBLASLt algorithm for that shape, profiles
# models/gpt-h200.json on the whole GPU and on SM partitions of 1/2 and 1/4, then for
# K in {1, 2, 4} and schedules 1F1B and GPipe simulates and runs the plan and prints one
# table: predicted vs measured step time and peak memory per stage, with errors.
# Without a GPU it stops within seconds with exit 1 and a one-line reason. Budget: 8 min.
# GPU_CHECK_DRY_RUN=1 rehearses steps 5-7 on the CPU backend with models/gpt-tiny.json and
# an existing build (GPU_CHECK_BUILD, default build), to check the script itself.
set -euo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
BUDGET=${GPU_CHECK_BUDGET_S:-470}
OUT=${OUT:-$PWD/gpu-check-out}
BUILD=${GPU_CHECK_BUILD:-build-gpu}
DTYPE=${GPU_CHECK_DTYPE:-bf16}
MODEL=models/gpt-h200.json
M=8; MB=4
DRY=${GPU_CHECK_DRY_RUN:-0}
BACKEND=cuda

die() { echo "gpu-check: $*" >&2; exit 1; }
left() { echo $((BUDGET - (SECONDS - START))); }
step() { echo "== $* ($((SECONDS - START)) s)"; }

if [ "$DRY" = 1 ]; then
  BUILD=${GPU_CHECK_BUILD:-build}; MODEL=models/gpt-tiny.json; DTYPE=fp32; BACKEND=cpu; M=4; MB=2
  [ -x "$BUILD/bin/pipescope" ] || die "dry run: no $BUILD/bin/pipescope (build first)"
fi

if [ "$DRY" != 1 ]; then
# 1. Fail fast: a driver and a GPU, and nvcc, before anything is built.
command -v nvidia-smi >/dev/null 2>&1 || die "no GPU here: nvidia-smi not found (run this on a machine with an NVIDIA GPU and driver)"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) || true
[ -n "$GPU" ] || die "no GPU here: nvidia-smi lists no device"
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || die "nvcc not found (CUDA toolkit needed to build)"
command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$OUT/profiles" "$OUT/runs"
echo "gpu-check on: $GPU"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.csv" || true

# 2. Configure and build for sm_90 (only what the check needs). An image without the C++
#    libraries (the H200's) gets them from .deps/ (scripts/gpu-deps.sh; carry .deps).
step "build"
if ls .deps/*.deb >/dev/null 2>&1; then eval "$(scripts/gpu-deps.sh env)"; fi
GEN=(); command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DPIPESCOPE_WITH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DPIPESCOPE_BUILD_GUI=OFF -DPIPESCOPE_BUILD_BENCHMARKS=OFF \
  -DPIPESCOPE_WITH_MPI=OFF > "$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log"; die "configure failed"; }
timeout "$(left)" cmake --build "$BUILD" -j"$(nproc)" --target pipescope cuda_api_tests cuda_backend_tests \
  > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; die "build failed"; }
fi  # not a dry run
P=$BUILD/bin/pipescope
TESTS=${TESTS:-"not run (dry run)"}; GPU=${GPU:-"none (dry run on $BACKEND)"}
mkdir -p "$OUT/profiles" "$OUT/runs"

if [ "$DRY" != 1 ]; then
# 3. The gpu tests: every kernel and layer vs the CPU reference, pipelined gradients.
step "gpu tests"
timeout "$(left)" ctest --test-dir "$BUILD" -L gpu --output-on-failure -j1 > "$OUT/gpu-tests.log" 2>&1 \
  && TESTS="passed" || TESTS="FAILED (see gpu-tests.log)"
grep -E "tests passed|tests failed|Skipped|Failed" "$OUT/gpu-tests.log" | tail -5 || true

# 4. GEMM efficiency of the largest layer (mlp fc1: [MB*seq, hidden] x [hidden, ffn]).
step "gemm"
timeout 60 "$P" profile gemm --m $((MB * 1024)) --n 8192 --k 2048 --dtype "$DTYPE" --json > "$OUT/gemm.json" \
  || echo '{"error": "cuda-gemm failed"}' > "$OUT/gemm.json"

fi  # not a dry run

# 5. Profiles: whole GPU, 1/2 and 1/4 SM partitions.
step "profiles"
for K in 1 2 4; do
  PART=(--sm-partition $K); [ "$BACKEND" = cuda ] || PART=()
  timeout "$(left)" "$P" profile --model "$MODEL" --backend $BACKEND --dtype "$DTYPE" "${PART[@]}" \
    --batch-sizes 1,2,4 --warmup 2 --repeats 5 -o "$OUT/profiles/gpt-h200-$DTYPE-sm$K.json" \
    || die "profiling on 1/$K of the GPU failed"
done

# 6. Simulate and run K in {1, 2, 4} x {1F1B, GPipe}.
step "simulate + run"
for K in 1 2 4; do
  for S in 1f1b gpipe; do
    PROF="$OUT/profiles/gpt-h200-$DTYPE-sm$K.json"
    FLAGS=(--profile "$PROF" --hardware profiles/h200-sm-partitions.json -K $K -M $M --microbatch-size $MB
           --schedule $S --partition balanced)
    "$P" simulate "${FLAGS[@]}" -o "$OUT/runs/k$K-$S-prediction.json" > /dev/null
    timeout "$(left)" "$P" run "${FLAGS[@]}" --backend $BACKEND --dtype "$DTYPE" --steps 5 --warmup 2 \
      -o "$OUT/runs/k$K-$S-measurement.json" --trace "$OUT/runs/k$K-$S-trace.json" > "$OUT/runs/k$K-$S-run.txt" 2>&1 \
      || { tail -5 "$OUT/runs/k$K-$S-run.txt"; echo "run K=$K $S failed" >> "$OUT/failures.txt"; continue; }
    "$P" compare "$OUT/runs/k$K-$S-prediction.json" "$OUT/runs/k$K-$S-measurement.json" --json \
      > "$OUT/runs/k$K-$S-comparison.json"
  done
done

# 7. One table (and results.json) from the comparisons.
step "table"
python3 scripts/gpu_check_table.py "$OUT" "$GPU" "$DTYPE" "$TESTS" | tee "$OUT/table.txt"
echo "gpu-check: done in $((SECONDS - START)) s; profiles and results under $OUT"
[ ! -f "$OUT/failures.txt" ] || die "some runs failed: $(tr '\n' ';' < "$OUT/failures.txt")"
