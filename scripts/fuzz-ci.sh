#!/usr/bin/env bash
# The fuzz run CI keeps (issue 47): cargo-fuzz's split_or_refuse target on
# the stable toolchain (no sanitizer, which needs nightly), for a bounded
# time, seeded with the corpus drivers.  Every input must split and write a
# complete OUT, or be refused with nothing written; a panic, an abort, a
# hang (-timeout) or a run out of memory is a finding, and fails the script.
#
#   [FUZZ_RUNS=3000] [FUZZ_SECS=300] scripts/fuzz-ci.sh
#
# It stops after FUZZ_RUNS inputs, or FUZZ_SECS seconds, whichever comes
# first (the suite runs it at the lowest priority beside the tests, so the
# time it gets varies; the number of inputs does not).
#
# Installs cargo-fuzz when it is missing.  Longer campaigns, with nightly
# and ASan: fgft-cc/fuzz/run.sh SECS split_or_refuse.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
secs=${FUZZ_SECS:-300}
runs_max=${FUZZ_RUNS:-3000}
target=split_or_refuse

if ! cargo fuzz --version >/dev/null 2>&1; then
	echo "fuzz-ci: installing cargo-fuzz"
	cargo install cargo-fuzz --locked --quiet
fi

cd fgft-cc/fuzz
# The seeds: one option byte (isolate patterns and flags, see the target),
# then a driver's .c, then `//@@ NAME.h` and the header it includes.
corpus=corpus/$target
rm -rf "$corpus" artifacts/$target
mkdir -p "$corpus" "artifacts/$target"
n=0
seed() { # option-byte(octal) c-file [header]
	local out=$corpus/seed-$n
	n=$((n + 1))
	printf "\\$1" >"$out"
	cat "$2" >>"$out"
	if [ $# -gt 2 ]; then
		printf '\n//@@ %s\n' "$(basename "$3")" >>"$out"
		cat "$3" >>"$out"
	fi
}
hc=$root/fgft-cc/tests/hostile_common/mod.rs
# The hostile suite's fixture driver, taken out of its Rust raw string.
sed -n '/^pub const DRIVER: &str = r#"/,/^"#;/p' "$hc" | sed '1s/.*r#"//;$d' >"$corpus/../drv.c"
sed -n 's/^pub const DRIVER_H: &str = "\(.*\)";/\1/p' "$hc" | sed 's/\\n/\n/g;s/\\t/\t/g' >"$corpus/../drv.h"
for opt in 011 001 004 003 045; do
	seed "$opt" "$corpus/../drv.c" "$corpus/../drv.h"
done
seed 011 "$root/corpus/drivers/fgft_char/fgft_char.c" "$root/corpus/drivers/fgft_char/fgft_char.h"
seed 004 "$root/corpus/drivers/fgft_ne2k/fgft_ne2k.c"
# Inputs that once failed (mutated from our own drivers): run first, every time.
cp "$root"/fgft-cc/fuzz/regressions/$target-* "$corpus/"
for f in "$root"/fgft-cc/tests/fixtures/survey/tree/*.c; do
	[ "$(stat -c %s "$f")" -le 65536 ] && seed 001 "$f"
done

echo "== cargo fuzz run $target ($runs_max inputs or ${secs} s, stable, no sanitizer, $n seeds)"
# Optimised, without debug info: the build is most of this step's time.
export CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_OPT_LEVEL=1
set +e
start=$SECONDS
cargo fuzz run --sanitizer none -O "$target" "$corpus" -- \
	-runs="$runs_max" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=20 \
	-print_final_stats=1 >"artifacts/$target.log" 2>&1
rc=$?
took=$((SECONDS - start))
set -e
grep -E 'stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs|SUMMARY|panicked|ERROR|artifact' \
	"artifacts/$target.log" || true
findings=$(find "artifacts/$target" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
if [ "$rc" != 0 ] || [ "$findings" != 0 ]; then
	echo "fuzz-ci: $target failed (exit $rc, $findings finding(s) under $(pwd)/artifacts/$target)" >&2
	tail -40 "artifacts/$target.log" >&2
	exit 1
fi
runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "artifacts/$target.log" | grep -oE '[0-9]+$' || echo 0)
# A run starved of CPU up to the time limit still has to have gone well
# past the seeds.
if [ "${runs:-0}" -lt 100 ]; then
	echo "fuzz-ci: only ${runs:-0} inputs ran in ${took} s: the target did not really run" >&2
	exit 1
fi
echo "fuzz-ci: $runs inputs in ${took} s (build included), no findings"
