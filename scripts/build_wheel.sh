#!/usr/bin/env bash
# Builds qoelab's abi3 wheel into OUTDIR (default target/wheels), with the bundled scenarios,
# data and example notebooks inside the package (qoelab/_bundle/), so the installed package needs
# no checkout and `qoelab examples DIR` can copy all three out.
#
# The tracked files are copied to a temporary tree, scenarios/ and data/ moved under
# python/qoelab/_bundle/ there, and maturin builds from that tree with this checkout's Cargo
# target folder (an already built release core is reused). The checkout is not modified.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-$repo/target/wheels}" && cd "${1:-$repo/target/wheels}" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$repo"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$tmp"
mkdir -p "$tmp/python/qoelab/_bundle"
mv "$tmp/scenarios" "$tmp/data" "$tmp/examples" "$tmp/python/qoelab/_bundle/"
cd "$tmp"
CARGO_TARGET_DIR="$repo/target" python3 -m maturin build --release --quiet -o "$out" >&2
ls "$out"/qoelab-*.whl
