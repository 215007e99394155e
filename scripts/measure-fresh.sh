#!/usr/bin/env bash
# Times README.md's two commands the way a newcomer meets them: in a fresh clone of HEAD,
# with an empty compiler cache and an empty Python environment cache (--cold, the default)
# or with this machine's warm ones (--warm). Debian packages are what this machine has
# (a fresh machine adds their apt install; scripts/install-deps.sh skips what is there).
# Prints one table row per command: the wall time, its exit status, and the cache used.
#   bash scripts/measure-fresh.sh [--cold|--warm] [--only 1|2] [--keep]
# The two commands are read from README.md's first two ```sh blocks, so what is timed is
# exactly what README says. Each runs in its own shell from the clone's root, one after
# the other (the second reuses what the first built, as it does for a newcomer).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=cold only="" keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cold) mode=cold ;;
    --warm) mode=warm ;;
    --only) only=$2; shift ;;
    --keep) keep=1 ;;
    *) echo "measure-fresh: unknown argument $1 (use --cold, --warm, --only 1|2, --keep)" >&2; exit 2 ;;
  esac
  shift
done

mapfile -t commands < <(awk '/^```sh$/{inside=1; next} /^```$/{if(inside){inside=0; n++}; next}
                              inside && n < 2 {print}' README.md)
[ ${#commands[@]} -eq 2 ] || { echo "measure-fresh: README.md's first two sh blocks should hold one command each" >&2; exit 2; }

work=$(mktemp -d /tmp/pipescope-fresh.XXXXXX)
git clone -q . "$work/pipescope"
if [ "$mode" = cold ]; then
  export CCACHE_DIR="$work/ccache" PIPESCOPE_VENV_HOME="$work/venvs"
  mkdir -p "$CCACHE_DIR" "$PIPESCOPE_VENV_HOME"
fi
echo "measure-fresh: $mode caches, clone of $(git rev-parse --short HEAD) in $work/pipescope, $(nproc) cores," \
     "load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
rows=()
for i in 1 2; do
  [ -n "$only" ] && [ "$only" != "$i" ] && continue
  start=$(date +%s)
  set +e
  (cd "$work/pipescope" && bash -c "${commands[$((i - 1))]}") > "$work/command$i.log" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - start ))
  rows+=("| $i | $mode | $((secs / 60)) min $((secs % 60)) s | $rc |")
  echo "measure-fresh: command $i took ${secs} s, exit $rc (log: $work/command$i.log)"
done
echo
echo "| README command | caches | wall | exit |"
echo "|---|---|---:|---:|"
printf '%s\n' "${rows[@]}"
[ "$keep" = 1 ] || rm -rf "$work/pipescope" "$work/ccache" "$work/venvs"
