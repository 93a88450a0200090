#!/usr/bin/env bash
# The main job: transform the upstream e1000 (linux-source-6.12), build it,
# boot it in QEMU on an emulated e1000, inject a fault into an ethtool entry
# point and show the recovery.  Installs what it needs on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/setup.sh --print-env)"
cargo build --release -q -p fgft-campaign
exec ./target/release/fgft-demo "$@"
