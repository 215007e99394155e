#!/usr/bin/env bash
# Installs the Debian 12 packages pipescope builds and tests with, skipping those
# already present (so it is quick on a machine that has them). Run as root.
set -euo pipefail
packages=(
  cmake ninja-build g++ ccache pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libboost-graph-dev
  libopenblas-dev libeigen3-dev
  libopenmpi-dev openmpi-bin
  qt6-base-dev qt6-charts-dev qt6-svg-dev libgl-dev xvfb
  python3-torch python3-pytest python3-numpy python3-jsonschema
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
