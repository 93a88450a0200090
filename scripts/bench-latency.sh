#!/usr/bin/env bash
# Benchmark (not a test), issue 18: timing isolation. cyclictest (rt-tests,
# SCHED_FIFO on CPU 1) while the e1000 driver, Debian's stock module and the
# fgft split, works on CPU 0 under five conditions, on Debian's stock 6.12
# kernel and on its PREEMPT_RT flavour, one QEMU boot each. Writes
# results/latency.md and results/latency.svg.
#
#   scripts/bench-latency.sh [stock|rt]...      (default: both kernels)
#   scripts/bench-latency.sh --from-logs        (the report again from the
#                                               last run's console logs)
#
# FGFT_LAT_SECS (10), FGFT_LAT_ROUNDS (3), FGFT_LAT_INTERVAL_US (1000),
# FGFT_LAT_PERIOD_MS (200), FGFT_LAT_CALLS (500) and FGFT_LAT_RATE (250
# frames/s of the traffic load, both builds), FGFT_LAT_CONDS (idle,mgmt,
# traffic,faults,hog) and FGFT_LAT_PIN (1: vCPU threads pinned) change the run
# (tools/campaign/src/latency.rs). About 20 minutes with the defaults.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh" --print-env > /dev/null
cd "$here"
exec cargo run --release -q -p fgft-campaign --example bench_latency -- \
	--out results/latency.md "$@"
