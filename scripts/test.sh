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
cargo test --workspace --locked --no-run
# The bounded fuzz run (scripts/fuzz-ci.sh) builds and runs beside the
# tests at the lowest priority: it takes the CPU the tests leave idle (a
# VM test runs one emulated CPU), and its result is checked after them.
fuzz_log=$(mktemp)
nice -n 19 bash scripts/fuzz-ci.sh >"$fuzz_log" 2>&1 &
fuzz_pid=$!
trap 'kill "$fuzz_pid" 2>/dev/null || true' EXIT
# Insta: CI=true makes missing or changed snapshots fail.
cargo test --workspace --locked -- --test-threads=2

step "fuzz: split-or-refuse on mutated corpus drivers (bounded; ran beside the tests)"
fuzz_rc=0
wait "$fuzz_pid" || fuzz_rc=$?
trap - EXIT
grep -vE '^ +(Compiling|Downloaded|Downloading|Installing|Installed|Updating|Locking|Adding|Blocking)' "$fuzz_log" || true
rm -f "$fuzz_log"
exit "$fuzz_rc"
