#!/usr/bin/env bash
# Benchmark (not a test), issue 17: restartable file systems. The fault
# campaign on fs/minix split by fgft (faults in every function its isolated
# operations reach, each fired once, some on every pass), the same faults
# in the module built without fgft (one boot each), and the workload's
# overhead against Debian's own minix module in one boot. Writes
# results/membrane.md.
#
#   scripts/bench-membrane.sh
#
# FGFT_FS_FAULTS_PER_ENTRY (6), FGFT_FS_NATIVE (all fired variants),
# FGFT_FS_ROUNDS (5) and FGFT_FS_OPS (2000) change the run
# (tools/campaign/src/membrane.rs). About 30 minutes with the defaults.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh" --print-env > /dev/null
cd "$here"
exec cargo run --release -q -p fgft-campaign --example bench_membrane -- \
	--out results/membrane.md "$@"
