#!/usr/bin/env bash
# Benchmark (not a test): the time `fgft-cc split` takes on e1000 against the
# time Kbuild takes to compile the original e1000, in the same run.
# Target: split <= 0.5 x the original build.
#
#   scripts/bench-split.sh [RUNS]      (default 3; the median is reported)
#
# The split is the release binary (built first), with the corpus sidecar and
# the ring hints the split tests use; the original build is a fresh
# out-of-tree `make -C $KDIR M=<copy of drivers/net/ethernet/intel/e1000>`.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
eval "$("$here/scripts/setup.sh" --print-env)"
runs=${1:-3}

cargo build --release -q -p fgft-cc --manifest-path "$here/Cargo.toml"
bin=$here/target/release/fgft-cc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

split_t=()
build_t=()
for i in $(seq "$runs"); do
	rm -rf "$work/out" "$work/e1000"
	t0=$(now)
	"$bin" split --annotations "$here/corpus/upstream/e1000.toml" \
		--tree "$SRC612" -o "$work/out" >/dev/null 2>&1
	t1=$(now)
	cp -r "$SRC612/drivers/net/ethernet/intel/e1000" "$work/e1000"
	sed -i 's/obj-$(CONFIG_E1000)/obj-m/' "$work/e1000/Makefile"
	t2=$(now)
	make -s -C "$KDIR" M="$work/e1000" modules >/dev/null 2>&1
	t3=$(now)
	split_t+=("$(echo "$t1 - $t0" | bc -l)")
	build_t+=("$(echo "$t3 - $t2" | bc -l)")
	printf 'run %d: split %.3f s, original Kbuild %.3f s\n' "$i" "${split_t[-1]}" "${build_t[-1]}"
done
s=$(printf '%s\n' "${split_t[@]}" | median)
b=$(printf '%s\n' "${build_t[@]}" | median)
printf 'median: split %.3f s, original e1000 Kbuild %.3f s, ratio %.3f (target <= 0.5)\n' \
	"$s" "$b" "$(echo "$s / $b" | bc -l)"
