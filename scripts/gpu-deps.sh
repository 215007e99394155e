#!/usr/bin/env bash
# The C++ libraries pipescope builds against (nlohmann-json, CLI11, GoogleTest, Boost
# headers, OpenBLAS), carried as Debian packages to a GPU machine whose image has CUDA,
# CMake and ninja but no package manager:
#   here:   scripts/gpu-deps.sh download          # -> .deps/*.deb (~23 MB; keep .deps out of git:
#                                                 #    echo /.deps/ >> .git/info/exclude), carry .deps
#   there:  eval "$(scripts/gpu-deps.sh env)"     # unpacks into /tmp/pipescope-deps once, prints exports
# scripts/gpu-check.sh runs the second step itself when .deps/ exists.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${PIPESCOPE_DEPS_ROOT:-/tmp/pipescope-deps}
PKGS=(nlohmann-json3-dev libcli11-dev libgtest-dev libboost1.74-dev libopenblas0-pthread libopenblas-pthread-dev libgfortran5)
case "${1:-}" in
  download)
    mkdir -p .deps
    (cd .deps && apt-get download "${PKGS[@]}")
    ls -la .deps
    ;;
  env)
    ls .deps/*.deb >/dev/null 2>&1 || { echo "gpu-deps: no .deps/*.deb (run 'scripts/gpu-deps.sh download' where apt works)" >&2; exit 1; }
    if [ ! -f "$ROOT/.unpacked" ]; then
      mkdir -p "$ROOT"
      for f in .deps/*.deb; do dpkg -x "$f" "$ROOT"; done
      LIB=$ROOT/usr/lib/x86_64-linux-gnu
      ln -sf openblas-pthread/libopenblas.so.0 "$LIB/libopenblas.so"   # what update-alternatives would do
      touch "$ROOT/.unpacked"
    fi
    LIB=$ROOT/usr/lib/x86_64-linux-gnu
    echo "export CMAKE_PREFIX_PATH=$ROOT/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
    echo "export CPATH=$ROOT/usr/include/x86_64-linux-gnu/openblas-pthread:$ROOT/usr/include\${CPATH:+:\$CPATH}"
    echo "export LIBRARY_PATH=$LIB:$LIB/openblas-pthread\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
    echo "export LD_LIBRARY_PATH=$LIB/openblas-pthread:$LIB\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
    ;;
  *)
    echo "usage: scripts/gpu-deps.sh download | env" >&2
    exit 2
    ;;
esac
