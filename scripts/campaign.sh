#!/usr/bin/env bash
# Benchmark (not a test): the full fault-injection campaign of issue 4 over
# every driver that runs in QEMU, native and under fgft, with the restart
# baseline and throughput, written to results/campaign.md.  CI keeps a small
# campaign (tests/campaign/tests/e1000_fgft.rs, crate fgft-campaign-tests);
# this is the long one.  The runner is tools/campaign (crate fgft-campaign).
#
#   scripts/campaign.sh                  all drivers below
#   DRIVERS="e1000 8139too" scripts/campaign.sh
#   scripts/campaign.sh --per-entry 1    extra flags go to fgft-campaign
#
# Other campaigns reuse it: FGFT_CAMPAIGN_SCRIPT names the caller in the
# report, FGFT_CAMPAIGN_ARGS replaces the default flags (campaign-io.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
drivers=${DRIVERS:-"e1000 8139too ne2k-pci pcnet32 e100 tulip psmouse ens1370 fgft_ne2k"}
configs=()
for d in $drivers; do
	configs+=("corpus/campaign/$d.toml")
done
cargo build --release --locked -q -p fgft-campaign
export FGFT_REPORT_CMD="${FGFT_CAMPAIGN_SCRIPT:-scripts/campaign.sh}${*:+ $*}"
[ -n "${DRIVERS:-}" ] && FGFT_REPORT_CMD="DRIVERS=\"$DRIVERS\" $FGFT_REPORT_CMD"
read -r -a args <<<"${FGFT_CAMPAIGN_ARGS:---seed 1 --per-entry 3 --timeout 30 --throughput 3 \
	--restarts 3 --report results/campaign.md}"
exec target/release/fgft-campaign "${configs[@]}" "${args[@]}" "$@"
