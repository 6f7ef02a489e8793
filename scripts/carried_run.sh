#!/bin/bash
# A reproduction too long for one machine, carried across machines in committed parts
# (runs-in-progress/README.md). Usage: scripts/carried_run.sh NAME [resume|pack|check]
#   resume (default): builds the pinned commit in .runs/pin (once), restores every part into
#                     .runs/NAME, re-runs a few packed runs to check this machine computes the same
#                     bytes, then resumes the pinned command there (interrupt it at will)
#   pack:             packs the runs finished since the last part into the next part
#   check:            restores and checks, without resuming
# Needs `make install` (for `qoelab runs`), run from anywhere in the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/carried_run.sh NAME [resume|pack|check]}
what=${2:-resume}
dir=runs-in-progress/$name
[ -f "$dir/run.conf" ] || { echo "carried_run: $dir/run.conf: no such carried run" >&2; exit 2; }
# shellcheck source=/dev/null
source "$dir/run.conf"
work=${WORK:-.runs/$name}  # run.conf may name it
pin=.runs/pin  # the path is part of the runs' scenarios (trace paths), so it never changes
venv=.runs/venv
parts=("$dir"/part-*.tar.xz)
[ -e "${parts[0]}" ] || parts=()

case "$what" in
  pack)
    after=()
    for p in "${parts[@]}"; do after+=(--after "$p"); done
    drop=()
    for f in "${DROP[@]}"; do drop+=(--drop "$f"); done
    next=$(printf '%s/part-%02d.tar.xz' "$dir" $((${#parts[@]} + 1)))
    python3 -m qoelab.cli runs pack "$work" -o "$next" "${drop[@]}" "${after[@]}"
    exit 0 ;;
  resume|check) ;;
  *) echo "carried_run: $what: expected resume, pack or check" >&2; exit 2 ;;
esac

if [ "$(git -C "$pin" rev-parse HEAD 2>/dev/null)" != "$PIN" ]; then
  rm -rf "$pin" "$venv"
  git worktree prune
  git worktree add --detach "$pin" "$PIN"
  python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -e "$pin"
fi
if [ ${#parts[@]} -gt 0 ]; then
  python3 -m qoelab.cli runs unpack "${parts[@]}" -o "$work"
  # The same bytes on this machine: re-run the two cheapest packed runs of each part with the
  # pinned code and compare their tables with the packed ones.
  "$venv/bin/python" scripts/carried_check.py "$work" "${parts[@]}"
fi
[ "$what" = check ] && exit 0
exec "$venv/bin/qoelab" "${ARGS[@]}" -o "$work"
