#!/usr/bin/env bash
# Runs every fuzz target for SECS seconds (default 120) with seed corpora
# taken from the repository and from linux-source-6.12 (nothing upstream is
# committed: corpora live in fgft-cc/fuzz/corpus, ignored by git).
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
#
#   [MAX_LEN=N] fgft-cc/fuzz/run.sh [SECS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
eval "$(bash "$root/scripts/setup.sh" --print-env)"
secs=${1:-120}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parse_text hint_rewrite sidecar kbuild rust_reader)

seed() { # target files...
	local t=$1
	shift
	mkdir -p "corpus/$t"
	for f in "$@"; do
		[ -f "$f" ] || continue
		# Seeds above 64 KiB slow libFuzzer down for little gain.
		[ "$(stat -c %s "$f")" -le 65536 ] || continue
		cp "$f" "corpus/$t/$(echo "$f" | md5sum | cut -c1-16)"
	done
}

fx=$root/fgft-cc/tests/fixtures/survey/tree
c_seeds=("$fx"/*.c "$fx"/fxnic/*.[ch] "$root"/corpus/drivers/*/*.c
	"$SRC612"/drivers/net/ethernet/realtek/8139cp.c
	"$SRC612"/drivers/net/mii.c "$SRC612"/drivers/input/mouse/synaptics_usb.c)
seed parse_text "${c_seeds[@]}"
seed hint_rewrite "${c_seeds[@]}"
seed sidecar "$root"/corpus/upstream/*.toml "$root"/corpus/drivers/*/*.toml
seed kbuild "$fx/Makefile" "$fx/fxnic/Makefile" "$SRC612"/drivers/net/phy/Makefile \
	"$SRC612"/drivers/net/ethernet/intel/Makefile "$SRC612"/drivers/net/Makefile
seed rust_reader "$fx"/*.rs "$SRC612"/drivers/net/phy/*.rs

for t in "${targets[@]}"; do
	echo "== $t ($secs s)"
	cargo +nightly fuzz run -O "$t" "corpus/$t" -- \
		-max_total_time="$secs" -max_len="${MAX_LEN:-65536}" -rss_limit_mb=2048 -timeout=20 \
		-print_final_stats=1 2>&1 | grep -E 'stat::|Done|SUMMARY|panicked|ERROR|artifact' || true
done
crashes=$(find artifacts -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \) 2>/dev/null | wc -l)
if [ "$crashes" != 0 ]; then
	echo "fuzz: $crashes finding(s) under $(pwd)/artifacts" >&2
	exit 1
fi
echo "fuzz: no findings"
