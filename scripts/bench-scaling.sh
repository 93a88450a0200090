#!/usr/bin/env bash
# Benchmark (not a test): how `fgft-cc split`'s time grows with the size of
# a source file (issue 47: edits linear in file size).  One run splits a
# generated 1 MB driver and a generated 10 MB one, side by side, and reports
# the ratio.  Target: 10 MB in under 10x the time of 1 MB.
#
#   scripts/bench-scaling.sh [RUNS]      (default 3; the medians are reported)
#   scripts/bench-scaling.sh --gen DIR BYTES   (only write the driver to DIR)
#
# The driver is the hostile suite's fixture (fgft-cc/tests/hostile_common)
# followed by small functions; one in fifty is called from an isolated
# ethtool op, so the SFI closure, the stubs and the edits grow with the file
# too.  The split is the release binary, without kernel headers.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}

cargo build --release -q -p fgft-cc --manifest-path "$here/Cargo.toml"
bin=$here/target/release/fgft-cc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

hc=$here/fgft-cc/tests/hostile_common/mod.rs
gen() { # dir bytes
	mkdir -p "$1"
	sed -n 's/^pub const DRIVER_H: &str = "\(.*\)";/\1/p' "$hc" | sed 's/\\n/\n/g;s/\\t/\t/g' >"$1/drv.h"
	echo 'obj-m += drv.o' >"$1/Makefile"
	sed -n '/^pub const DRIVER: &str = r#"/,/^"#;/p' "$hc" | sed '1s/.*r#"//;$d' |
		awk -v bytes="$2" '
		# The fillers come before the fixture: the isolated op calls them.
		function filler(i) {
			return sprintf("\nstatic int filler_%d(struct adapter *a, int v)\n{\n\tif (v > %d)\n\t\ta->count += v - %d;\n\treturn a->msg_enable + v * %d;\n}\n", i, i % 97, i % 89, i % 13 + 1)
		}
		{ fixture = fixture $0 "\n" }
		END {
			# How many fillers fit (sizes only), then the calls to one in fifty.
			n = 0; size = length(fixture); calls = ""
			while (size < bytes) {
				size += length(filler(n))
				if (n % 50 == 0) {
					c = sprintf("\ta->count += filler_%d(a, %d);\n", n, n); calls = calls c; size += length(c)
				}
				n++
			}
			sub(/\ta->count\+\+;\n/, "\ta->count++;\n" calls, fixture)
			# The include lines first, then the fillers, then the rest.
			k = split(fixture, L, "\n"); rest = ""
			for (i = 1; i < k; i++) {
				if (L[i] ~ /^#include/) printf "%s\n", L[i]; else rest = rest L[i] "\n"
			}
			for (i = 0; i < n; i++) printf "%s", filler(i)
			printf "%s", rest
		}' >"$1/drv.c"
}

if [ "$runs" = --gen ]; then
	gen "$2" "$3"
	exit 0
fi

gen "$work/d1" $((1 << 20))
gen "$work/d10" $((10 << 20))
printf 'sources: %s bytes and %s bytes\n' "$(stat -c %s "$work/d1/drv.c")" "$(stat -c %s "$work/d10/drv.c")"

t1=()
t10=()
for i in $(seq "$runs"); do
	for d in d1 d10; do
		rm -rf "$work/o-$d"
		a=$(now)
		FGFT_TIMINGS=1 "$bin" split "$work/$d" -o "$work/o-$d" --no-kdir --no-checkpoint \
			--isolate 'ethtool_ops.*' >"$work/$d.log" 2>&1 ||
			{ cat "$work/$d.log" >&2; exit 1; }
		b=$(now)
		if [ "$d" = d1 ]; then t1+=("$(echo "$b - $a" | bc -l)"); else t10+=("$(echo "$b - $a" | bc -l)"); fi
	done
	printf 'run %d: 1 MB %.3f s, 10 MB %.3f s\n' "$i" "${t1[-1]}" "${t10[-1]}"
done
m1=$(printf '%s\n' "${t1[@]}" | median)
m10=$(printf '%s\n' "${t10[@]}" | median)
printf 'median: 1 MB %.3f s, 10 MB %.3f s, ratio %.2f (target < 10; %s)\n' "$m1" "$m10" \
	"$(echo "$m10 / $m1" | bc -l)" "$(tail -1 "$work/d10.log")"
# Where the time went in the last run of each size (FGFT_TIMINGS).
paste <(sed -n 's/^fgft-cc: timing: \(.*\): \(.*\) s$/\1 \2/p' "$work/d1.log") \
	<(sed -n 's/^fgft-cc: timing: .*: \(.*\) s$/\1/p' "$work/d10.log") |
	awk '{printf "  stage %-13s 1 MB %7.3f s, 10 MB %7.3f s, ratio %5.2f\n", $1, $2, $3, ($2 > 0 ? $3 / $2 : 0)}'
