#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit/golden/property tests, kernel
# builds and VM tests.  Installs what it needs (apt, via setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

eval "$(bash scripts/setup.sh --print-env)"

step() { printf '\n== %s\n' "$*"; }

if ! command -v cargo >/dev/null; then
	echo "test.sh: cargo is required (rustup toolchain)" >&2
	exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

step "rustfmt"
cargo fmt --all -- --check

step "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "size limits (files, functions)"
bash scripts/check-size.sh

step "checkpatch (our C)"
bash scripts/checkpatch.sh

step "cargo test (unit, golden, property, kernel builds, VM)"
# Insta: CI=true makes missing or changed snapshots fail.
cargo test --workspace --locked -- --test-threads=2
