#!/usr/bin/env bash
# Installs what pipescope builds and tests with on a fresh Debian 12 machine (as root),
# skipping what is already there, so a second run takes seconds:
#   1. Debian packages (compilers, GoogleTest, Google Benchmark, Qt 6, Boost, MPI, ...);
#   2. cuBLAS and NCCL beside the CUDA Toolkit in /usr/local/cuda when nvcc is there but
#      they are not (NVIDIA's PyPI wheels, linked into the toolkit's include/ and lib64/);
#   3. the Python environment .venv (Python 3.11, torch 2.13.0 CPU and the pinned
#      packages of python/requirements.txt + python/constraints.txt; DeepSpeed and torchtitan
#      after them).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ ccache mold pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libboost-graph-dev
  libopenblas-dev libeigen3-dev
  libopenmpi-dev openmpi-bin
  qt6-base-dev qt6-charts-dev qt6-svg-dev libgl-dev xvfb
  python3-venv  # only for a machine whose python3.11 is Debian's (pyenv's has venv)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} Debian packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python that makes .venv: PIPESCOPE_PYTHON, else python3.11, else python3 (3.11:
# the torch wheel on these machines is cp311).
py=${PIPESCOPE_PYTHON:-}
if [ -z "$py" ]; then
  for c in python3.11 python3; do command -v "$c" >/dev/null && { py=$(command -v "$c"); break; }; done
fi
pip_quiet() { "$@" 2>&1 | grep -vE "is ignored: it is neither|Running pip as the 'root'" || true; }

cuda=/usr/local/cuda
if [ -x "$cuda/bin/nvcc" ] && { [ ! -e "$cuda/include/cublas_v2.h" ] || [ ! -e "$cuda/include/nccl.h" ]; }; then
  echo "install-deps: cuBLAS 13.1 and NCCL 2.28.9 into $cuda (from NVIDIA's wheels)"
  libs=/opt/pipescope-cuda-libs
  pip_quiet "$py" -m pip install -q --upgrade --no-deps --target "$libs" nvidia-cublas==13.1.0.3 nvidia-nccl-cu13==2.28.9
  for dir in "$libs"/nvidia/cu13 "$libs"/nvidia/nccl; do
    for h in "$dir"/include/*; do ln -sfn "$h" "$cuda/include/$(basename "$h")"; done
    for l in "$dir"/lib/*.so.*; do
      base=$(basename "$l")
      ln -sfn "$l" "$cuda/lib64/$base"
      ln -sfn "$base" "$cuda/lib64/${base%%.so.*}.so"
    done
  done
  echo "$cuda/lib64" > /etc/ld.so.conf.d/pipescope-cuda.conf
  ldconfig
fi

# The environment is built once per machine and per pinned set, in
# $PIPESCOPE_VENV_HOME/<hash of the pins> (default /opt/pipescope-venvs), and .venv is a
# link to it: a second clone on the same machine (CI's fresh clone) reuses it at once, and a
# change of pins builds a new one. A .venv that is a real folder with the same pins is kept.
venv=.venv
want=$(cat python/requirements.txt python/constraints.txt | sha256sum | cut -d' ' -f1)
usable() {  # usable DIR: DIR holds an environment of these pins whose packages import
  [ -f "$1/.pipescope-requirements" ] && [ "$(cat "$1/.pipescope-requirements")" = "$want" ] &&
    "$1/bin/python" -c "import torch, deepspeed" 2>/dev/null
}
if [ -d "$venv" ] && [ ! -L "$venv" ] && usable "$venv"; then
  echo "install-deps: $venv up to date ($("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
  exit 0
fi
home=${PIPESCOPE_VENV_HOME:-/opt/pipescope-venvs}
target="$home/${want:0:16}"
if ! usable "$target"; then
  echo "install-deps: Python environment $target from $py ($("$py" --version 2>&1))"
  rm -rf "$target"
  mkdir -p "$home"
  "$py" -m venv "$target"
  pip_quiet "$target/bin/python" -m pip install -q -r python/requirements.txt -c python/constraints.txt
  # DeepSpeed ships a source archive whose setup.py imports torch: build it against the torch
  # just installed (no isolated build environment, which would fetch another torch) and
  # without its C++/CUDA ops (only its pure-Python schedules and partitioners are used).
  DS_BUILD_OPS=0 pip_quiet "$target/bin/python" -m pip install -q --no-build-isolation \
    -c python/constraints.txt deepspeed==0.19.8
  # torchtitan (its version and these in constraints.txt) without its dependencies: the
  # oracle runs only its config parsing and pipeline split, whose imports are these
  # pure-Python packages (tyro for the CLI, spmd_types, torchdata's StatefulDataLoader).
  pip_quiet "$target/bin/python" -m pip install -q --no-deps -c python/constraints.txt \
    torchtitan tyro docstring-parser typeguard spmd_types torchdata
  "$target/bin/python" -c "import torch, transformers, deepspeed, megatron.core, torchtitan.config" 2>/dev/null
  echo "$want" > "$target/.pipescope-requirements"
fi
rm -rf "$venv"
ln -sfn "$target" "$venv"
echo "install-deps: $venv -> $target ($("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
