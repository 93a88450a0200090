#!/usr/bin/env bash
# Benchmark command (not part of the test suite): `fgft-cc survey` and
# `fgft-cc roots` over all of drivers/, fs/ and sound/ of linux-source-6.12.
# Fails if any run panics (exit code 101, or "panicked at" on stderr), or
# if the survey exits with anything but 0.  `roots` exits 1 when some files
# get located diagnostics (budget, binary data): that is not a panic.
#
#   scripts/no-panic-sweep.sh [TREE...]   (default: drivers fs sound)
#
# CI keeps a deterministic sample of the same files as a cargo test
# (fgft-cc/tests/survey_sample.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/setup.sh --print-env)"

trees=("$@")
[ ${#trees[@]} -gt 0 ] || trees=(drivers fs sound)
out=results/raw/sweep
mkdir -p "$out"
cargo build --release --locked -q -p fgft-cc
bin=$PWD/target/release/fgft-cc
export RUST_BACKTRACE=1

fail=0
for t in "${trees[@]}"; do
	dir=$SRC612/$t
	for cmd in survey roots; do
		log=$out/$t.$cmd.stderr
		t0=$(date +%s)
		set +e
		if [ "$cmd" = survey ]; then
			/usr/bin/time -f '%M' -o "$out/$t.$cmd.rss" \
				"$bin" survey "$dir" -j 2 --no-progress \
				--json "$out/$t.survey.json" >"$out/$t.survey.txt" 2>"$log"
		else
			/usr/bin/time -f '%M' -o "$out/$t.$cmd.rss" \
				"$bin" roots "$dir" >"$out/$t.roots.txt" 2>"$log"
		fi
		rc=$?
		set -e
		t1=$(date +%s)
		rss=$(tail -n 1 "$out/$t.$cmd.rss")
		panics=$(grep -c 'panicked at' "$log" || true)
		printf '%-8s %-6s exit=%-3s panics=%-3s %4ss  peak RSS %d MiB\n' \
			"$t" "$cmd" "$rc" "$panics" $((t1 - t0)) $((rss / 1024))
		if [ "$rc" = 101 ] || [ "$panics" != 0 ] ||
			{ [ "$cmd" = survey ] && [ "$rc" != 0 ]; }; then
			grep -m 5 -A 3 'panicked at' "$log" || tail -n 5 "$log"
			fail=1
		fi
	done
	[ -f "$out/$t.survey.txt" ] && tail -n 4 "$out/$t.survey.txt"
done
if [ "$fail" != 0 ]; then
	echo "no-panic-sweep: FAILED" >&2
	exit 1
fi
echo "no-panic-sweep: 0 panics"
