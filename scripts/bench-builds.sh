#!/usr/bin/env bash
# Benchmark command: every corpus driver split and built on every kernel it
# supports (6.12, 6.1, 6.12 PREEMPT_RT), not the 6.1 sample CI builds.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/setup.sh --print-env)"
start=$(date +%s)
FGFT_BUILD_ALL=1 cargo test -p fgft-cc --locked --test split_build -- --nocapture
echo "bench-builds: all corpus builds in $(($(date +%s) - start)) s"
