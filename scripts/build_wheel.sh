#!/usr/bin/env bash
# Builds qoelab's abi3 wheel into OUTDIR (default target/wheels), with the bundled scenarios,
# data and example notebooks inside the package (qoelab/_bundle/), so the installed package needs
# no checkout and `qoelab examples DIR` can copy all three out.
#
# The wheel is tagged manylinux_2_28 and needs no glibc newer than 2.28 (RHEL/Rocky 8, Ubuntu
# 20.04, Debian 11 and later): maturin links the extension through zig (PyPI's `ziglang`, in the
# `wheel` extra), whose glibc 2.28 stubs stand in for this machine's newer glibc, and refuses to
# tag a wheel that needs more. Linking through zig makes cargo build for an explicit target, so
# the release graph is built once more, in target/x86_64-unknown-linux-gnu/ (beside, never over,
# the native target/release/ that `make install` uses); later builds reuse it.
#
# The tracked files are copied to a temporary tree, scenarios/ and data/ moved under
# python/qoelab/_bundle/ there, and maturin builds from that tree with this checkout's Cargo
# target folder. The checkout is not modified.
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
# maturin looks for zig as `python3 -m ziglang`; name the interpreter that has it (a pyenv shim
# in front of maturin would otherwise put another python3 first on PATH)
py="$(python3 -c 'import sys; print(sys.executable)')"
if ! "$py" -c 'import ziglang' 2>/dev/null; then
  echo "build_wheel: zig is missing: pip install -c requirements.lock 'ziglang' (or -e '.[wheel]')" >&2
  exit 2
fi
CARGO_ZIGBUILD_PYTHON_PATH="$py" CARGO_TARGET_DIR="$repo/target" \
  "$py" -m maturin build --release --zig --compatibility manylinux_2_28 --quiet -o "$out" >&2
ls "$out"/qoelab-*.whl
