# qoelab: the two set-up commands of the README are `make demo` and `make test`.
PY ?= python3
PIP ?= $(PY) -m pip

.PHONY: install system-deps demo test test-rust test-python bench lock

# System tools: tshark (pcap checks). Installed only when missing.
system-deps:
	@bash scripts/install-system-deps.sh

# Builds the Rust core (release) and installs the Python package in editable mode. pyproject.toml
# declares ranges; requirements.lock pins the exact versions CI and this command install.
install: system-deps
	$(PIP) install --disable-pip-version-check -q -c requirements.lock -e '.[test]'

# Re-resolves requirements.lock from pyproject.toml's ranges (needs `pip install uv`); review the
# diff, run `make test`, commit both.
lock:
	uv pip compile pyproject.toml --extra test --extra notebooks --extra dask --extra docs --extra wheel --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 --no-header --annotation-style line -o requirements.lock

demo: install
	$(PY) -m qoelab.cli demo

test-rust:
	cargo fmt --all --check
	$(PY) scripts/module_cycles.py --lang rust
	RUSTDOCFLAGS="-D warnings" cargo doc -p qoelab-core --no-deps --quiet
	cargo test --workspace --release

test-python: install
	$(PY) scripts/module_cycles.py --lang python
	$(PY) -m pytest

test: install test-rust test-python

bench: install
	$(PY) -m qoelab.cli bench --reps 3
