#!/usr/bin/env bash
# Benchmark (not a test): the I/O-path fault campaign of issue 14. Faults go
# into each driver's transmit, interrupt and NAPI poll (the configs'
# io_path), armed while the traffic check runs; native and under fgft,
# written to results/campaign-io.md.  Runs scripts/campaign.sh with its own
# flags (fgft-campaign --io-path).
#
#   scripts/campaign-io.sh                  e1000 and 8139too
#   DRIVERS=8139too scripts/campaign-io.sh
#   scripts/campaign-io.sh --per-entry 2    extra flags go to fgft-campaign
set -euo pipefail
cd "$(dirname "$0")/.."
# 24 variants per entry point: at least 30 faults that fire per driver over
# 3 entries (some variants never reach their site under the traffic check:
# 15 of e1000's 40 at 16 per entry sat in TSO, 82544 and PCI-X branches and
# error paths).
FGFT_CAMPAIGN_SCRIPT=scripts/campaign-io.sh \
FGFT_CAMPAIGN_ARGS="--io-path --seed 1 --per-entry 24 --timeout 60 --restarts 0 --report results/campaign-io.md" \
DRIVERS=${DRIVERS:-"e1000 8139too"} \
	exec bash scripts/campaign.sh "$@"
