#!/usr/bin/env bash
# The readiness benchmark (not a test): every drivers/net module that the
# installed kernel's configuration builds as a module (=m) and that has
# ethtool entry points is split with the management profile and no sidecar,
# built against the kernel's headers, and counted.  Writes
# results/readiness.md (6.12) and results/readiness-6.1.md (6.1), with
# every module's result as JSON beside them.
#
# Usage: scripts/bench-readiness.sh [TREE]   (default: linux-source-6.12)
#        FGFT_READINESS_SAMPLE=N   only N modules, evenly spaced
#        FGFT_READINESS_SAMPLE_61=N   the same for the 6.1 run only
#        FGFT_READINESS_JOBS=J     modules at once (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/setup.sh --print-env)"
cargo build --release -q -p fgft-readiness
bin=target/release/fgft-readiness
jobs=${FGFT_READINESS_JOBS:-$(nproc)}
sample=()
[ -n "${FGFT_READINESS_SAMPLE:-}" ] && sample=(--sample "$FGFT_READINESS_SAMPLE")
mkdir -p results/readiness
tree612=${1:-$SRC612}
"$bin" --tree "$tree612" --kdir "$KDIR" --jobs "$jobs" "${sample[@]}" \
	--title "drivers/net of Linux 6.12 (management profile, no sidecar)" \
	--command "scripts/bench-readiness.sh" \
	-o results/readiness.md --json results/readiness/6.12.json
sample61=("${sample[@]}")
[ -n "${FGFT_READINESS_SAMPLE_61:-}" ] && sample61=(--sample "$FGFT_READINESS_SAMPLE_61")
if [ -z "${1:-}" ]; then
	"$bin" --tree "$SRC61" --kdir "$KDIR61" --jobs "$jobs" "${sample61[@]}" \
		--title "drivers/net of Linux 6.1 (management profile, no sidecar)" \
		--command "scripts/bench-readiness.sh" \
		-o results/readiness-6.1.md --json results/readiness/6.1.json
fi
echo "results/readiness.md written"
