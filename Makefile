# qoelab: the two set-up commands of the README are `make demo` and `make test`.
PY ?= python3
PIP ?= $(PY) -m pip

.PHONY: install system-deps demo test test-rust test-python bench

# System tools: tshark (pcap checks). Installed only when missing.
system-deps:
	@bash scripts/install-system-deps.sh

# Builds the Rust core (release) and installs the Python package in editable mode, with pinned
# Python dependencies.
install: system-deps
	$(PIP) install --disable-pip-version-check -q -e '.[test]'

demo: install
	$(PY) -m qoelab.cli demo

test-rust:
	cargo fmt --all --check
	$(PY) scripts/module_cycles.py
	RUSTDOCFLAGS="-D warnings" cargo doc -p qoelab-core --no-deps --quiet
	cargo test --workspace --release

test-python: install
	$(PY) -m pytest

test: install test-rust test-python

bench: install
	$(PY) -m qoelab.cli bench --reps 3
