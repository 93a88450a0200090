#!/usr/bin/env bash
# Benchmark (not a test): `fgft-cc survey` of drivers/net against raw
# tree-sitter-c parsing of the same .c files, in one run on 2 worker threads,
# with the survey's peak RSS.  Targets (issue 6): survey <= 1.5x raw parsing,
# peak RSS <= 1 GiB.
#
#   scripts/bench-survey.sh [TREE]     (default: $SRC612/drivers/net)
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

cargo build --release --locked -q -p fgft-cc
cargo build --release --locked -q -p fgft-survey --example raw-parse
bin=target/release/fgft-cc
raw=target/release/examples/raw-parse

# Warm the page cache so both runs read from memory.
find "$tree" -name '*.[ch]' -print0 | xargs -0 cat >/dev/null

secs() { # command... -> wall seconds (stdout), peak RSS KiB in $rss
	local t0 t1 log
	log=$(mktemp)
	t0=$(date +%s.%N)
	/usr/bin/time -f '%M' -o "$log" "$@" >/dev/null
	t1=$(date +%s.%N)
	rss=$(tail -n 1 "$log")
	rm -f "$log"
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }' 
}

raw_s=$(secs "$raw" "$tree" -j "$jobs")
raw_rss=$rss
survey_s=$(secs "$bin" survey "$tree" -j "$jobs" --no-progress --json "$out/survey.json")
survey_rss=$rss
"$bin" survey "$tree" -j "$jobs" --no-progress >"$out/survey.txt" 2>/dev/null

ratio=$(awk -v a="$survey_s" -v b="$raw_s" 'BEGIN { printf "%.3f", a / b }')
printf 'tree            %s\n' "$tree"
printf 'raw tree-sitter %.2f s  (peak RSS %d MiB)\n' "$raw_s" $((raw_rss / 1024))
printf 'fgft-cc survey  %.2f s  (peak RSS %d MiB)\n' "$survey_s" $((survey_rss / 1024))
printf 'ratio           %.2fx   (target <= 1.5x)\n' "$ratio"
printf 'peak RSS        %d MiB  (target <= 1024 MiB)\n' $((survey_rss / 1024))
printf 'load average    %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
tail -n 4 "$out/survey.txt"
