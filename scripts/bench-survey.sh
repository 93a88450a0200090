#!/usr/bin/env bash
# Benchmark (not a test): `fgft-cc survey` of drivers/net against raw
# tree-sitter-c parsing of the same .c files and against `spatch -j 2` with
# the ethtool_ops query (fgft-cc/tests/cocci/), in one run on 2 worker
# threads, with peak RSS.  Targets (issue 6): survey <= 1.5x raw parsing,
# peak RSS <= 1 GiB.  (`fgft-cc roots` against all four spatch queries and
# recall: scripts/bench-roots.sh.)
#
#   scripts/bench-survey.sh [TREE]     (default: $SRC612/drivers/net)
#   NO_SPATCH=1 scripts/bench-survey.sh   skips the spatch run
#   ROUNDS=N (default 3): raw and survey alternate N times; the ratio is
#   the median of the per-round ratios (other jobs on the 2 cores move
#   single runs by 10% and more).
#
# Prints one line per measurement and a summary; writes the survey's JSON and
# table to results/raw/survey/ (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/setup.sh --print-env)"

tree=${1:-$SRC612/drivers/net}
jobs=2
out=results/raw/survey
mkdir -p "$out"
rm -f "$out"/*.secs "$out"/*.rss "$out"/*.cpu "$out"/*.time

cargo build --release --locked -q -p fgft-cc
cargo build --release --locked -q -p fgft-survey --example raw-parse
bin=target/release/fgft-cc
raw=target/release/examples/raw-parse

# Warm the page cache so both runs read from memory.
find "$tree" -name '*.[ch]' -print0 | xargs -0 cat >/dev/null

run() { # name command...: wall seconds to $out/name.secs, peak RSS KiB to
	# $out/name.rss, user+system CPU seconds to $out/name.cpu
	local name=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	/usr/bin/time -f '%M %U %S' -o "$out/$name.time" "$@" >/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }' >"$out/$name.secs"
	tail -n 1 "$out/$name.time" | awk '{ print $1 }' >"$out/$name.rss"
	tail -n 1 "$out/$name.time" | awk '{ printf "%.2f", $2 + $3 }' >"$out/$name.cpu"
}

rounds=${ROUNDS:-3}
: >"$out/rounds"
for r in $(seq 1 "$rounds"); do
	run raw "$raw" "$tree" -j "$jobs"
	run survey "$bin" survey "$tree" -j "$jobs" --no-progress --json "$out/survey.json"
	echo "$(cat "$out/raw.secs") $(cat "$out/raw.cpu") $(cat "$out/survey.secs") \
$(cat "$out/survey.cpu") $(cat "$out/survey.rss")" >>"$out/rounds"
	printf 'round %d: raw %s s wall %s s CPU, survey %s s wall %s s CPU\n' "$r" \
		"$(cat "$out/raw.secs")" "$(cat "$out/raw.cpu")" \
		"$(cat "$out/survey.secs")" "$(cat "$out/survey.cpu")"
done
"$bin" survey "$tree" -j "$jobs" --no-progress >"$out/survey.txt" 2>/dev/null
if [ -z "${NO_SPATCH:-}" ] && command -v spatch >/dev/null; then
	run spatch spatch -j "$jobs" --very-quiet \
		--sp-file fgft-cc/tests/cocci/ethtool_ops.cocci --dir "$tree" ||
		{ echo "spatch failed" >&2; rm -f "$out/spatch.secs"; }
fi
# Medians over the rounds: times, and the per-round ratios.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v c="$1" '{ print $c }' "$out/rounds" | median; }
raw_s=$(col 1)
raw_cpu=$(col 2)
survey_s=$(col 3)
survey_cpu=$(col 4)
raw_rss=$(tail -n 1 "$out/raw.rss")
survey_rss=$(awk '{ print $5 }' "$out/rounds" | sort -g | tail -n 1)
ratio=$(awk '{ printf "%.3f\n", $3 / $1 }' "$out/rounds" | median)
# CPU time is steadier than wall time when other jobs share the 2 cores.
cpu_ratio=$(awk '{ printf "%.3f\n", $4 / $2 }' "$out/rounds" | median)
printf 'tree            %s  (%d rounds, medians)\n' "$tree" "$rounds"
printf 'raw tree-sitter %.2f s wall, %s s CPU  (peak RSS %d MiB)\n' \
	"$raw_s" "$raw_cpu" $((raw_rss / 1024))
printf 'fgft-cc survey  %.2f s wall, %s s CPU  (peak RSS %d MiB)\n' \
	"$survey_s" "$survey_cpu" $((survey_rss / 1024))
if [ -f "$out/spatch.secs" ]; then
	printf 'spatch -j %d    %.2f s  (ethtool_ops query only; peak RSS %d MiB)\n' \
		"$jobs" "$(cat "$out/spatch.secs")" $(($(tail -n 1 "$out/spatch.rss") / 1024))
fi
printf 'ratio           %.2fx wall, %.2fx CPU  (target <= 1.5x)\n' "$ratio" "$cpu_ratio"
printf 'peak RSS        %d MiB  (target <= 1024 MiB)\n' $((survey_rss / 1024))
printf 'load average    %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
tail -n 4 "$out/survey.txt"
