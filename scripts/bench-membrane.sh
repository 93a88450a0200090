#!/usr/bin/env bash
# Benchmark (not a test), issue 17: restartable file systems. For minix and
# VFAT (fat.ko and vfat.ko split as one module): the fault campaign on the
# split file system (faults in every function its isolated operations
# reach, each fired once, some on every pass), the same faults in the
# modules built without fgft (one boot each), and the workload's overhead
# against Debian's own modules in one boot. Writes results/membrane.md.
#
#   scripts/bench-membrane.sh [minix|vfat]...     (default: both)
#
# FGFT_FS_FAULTS_PER_ENTRY (6 for minix, 2 for VFAT), FGFT_FS_NATIVE (all
# fired variants), FGFT_FS_ROUNDS (5) and FGFT_FS_OPS (2000) change the run
# (tools/campaign/src/membrane.rs). About an hour with the defaults.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh" --print-env > /dev/null
cd "$here"
exec cargo run --release -q -p fgft-campaign --example bench_membrane -- \
	--out results/membrane.md "$@"
