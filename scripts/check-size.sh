#!/usr/bin/env bash
# Size limits of the code map (issue "One house"): no product Rust source
# file over 1,500 lines, and no function over 150 lines in split's plan and
# emit stages or in stubs-gen.  Tests, fuzz targets and examples are not
# product sources.  Prints every offender; exits 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

max_file=1500
max_fn=150
bad=0

product=$(git ls-files --cached --others --exclude-standard '*.rs' | grep -vE '(^|/)(tests?|fuzz|examples|benches)/|(^|/)tests\.rs$' || true)
for f in $product; do
	n=$(wc -l <"$f")
	if [ "$n" -gt "$max_file" ]; then
		echo "$f: $n lines (limit $max_file)"
		bad=1
	fi
done

# A function runs from its `fn` line to the first line holding only its
# indentation and `}`.
fn_lengths() {
	awk -v max="$max_fn" '
	function report(len) { if (len > max) { printf "%s:%d: fn %s is %d lines (limit %d)\n", FILENAME, start, name, len, max; bad = 1 } }
	FNR == 1 { infn = 0 }
	!infn && /^[[:space:]]*(pub(\([a-z]+\))? )?(const )?(unsafe )?fn [A-Za-z_0-9]+/ {
		line = $0
		ind = line; sub(/[^[:space:]].*$/, "", ind)
		nm = line; sub(/^[^f]*fn /, "", nm); sub(/[^A-Za-z_0-9].*$/, "", nm)
		# a declaration without a body (trait method) has no block
		if (line ~ /;[[:space:]]*$/) next
		if (line ~ /\{.*\}[[:space:]]*$/) next
		infn = 1; depth = ind; name = nm; start = FNR
		next
	}
	infn && $0 == depth "}" { report(FNR - start + 1); infn = 0 }
	END { exit bad }
	' "$@"
}
stage=$(git ls-files --cached --others --exclude-standard 'fgft-cc/split/src/plan/*.rs' 'fgft-cc/split/src/emit/*.rs' 'stubs-gen/src/*.rs' |
	grep -vE '(^|/)tests\.rs$' || true)
if [ -n "$stage" ]; then
	fn_lengths $stage || bad=1
fi
exit $bad
