#!/usr/bin/env bash
# Benchmark (not a test) for `fgft-cc roots` on a kernel tree, default
# $SRC612/drivers/net, all in one run on this machine:
#   - parse health: share of top-level functions with no ERROR/MISSING node,
#     raw tree-sitter-c against fgft's macro hints, and parse speed;
#   - `fgft-cc roots` and `spatch -j 2` with the ethtool_ops query (the
#     issue's yardstick), alternating ROUNDS times (default 3): medians of
#     wall and CPU time, peak RSS;
#   - the other three spatch queries, and the recall of roots against all
#     four (function fields only: `.name = DRV_NAME` is no slot).
# Usage: scripts/bench-roots.sh [TREE]   (QUERIES=ethtool_ops to run only one)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
eval "$("$root/scripts/setup.sh" --print-env)"
tree=$(cd "${1:-$SRC612/drivers/net}" && pwd)
queries=${QUERIES:-"ethtool_ops net_device_ops pci_driver dev_pm_ops"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cd "$root"
cargo build -q --release -p fgft-cc
cargo build -q --release -p fgft-parse --example parse-health
bin=$root/target/release
echo "tree: $tree ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"

echo "== parse health (top-level functions without ERROR/MISSING nodes)"
"$bin/examples/parse-health" "$tree" --raw | head -1
"$bin/examples/parse-health" "$tree" | head -1

# roots (all four slot kinds) and spatch's ethtool_ops query alternate
# ROUNDS times (default 3) in this run; medians of wall and CPU time.
echo "== fgft-cc roots against spatch -j 2 (ethtool_ops), side by side"
rounds=${ROUNDS:-3}
: >"$out/rounds"
for r in $(seq 1 "$rounds"); do
	/usr/bin/time -f "%e %U %S %M" -o "$out/roots.time" \
		"$bin/fgft-cc" roots "$tree" >"$out/roots.txt"
	/usr/bin/time -f "%e %U %S %M" -o "$out/spatch.time" \
		spatch -j 2 --very-quiet --sp-file "$root/fgft-cc/tests/cocci/ethtool_ops.cocci" \
		--dir "$tree" >"$out/ethtool_ops.txt" 2>"$out/ethtool_ops.err" ||
		{ echo "spatch ethtool_ops failed:"; tail -5 "$out/ethtool_ops.err"; exit 1; }
	echo "$(tail -n 1 "$out/roots.time") $(tail -n 1 "$out/spatch.time")" >>"$out/rounds"
	awk -v r="$r" '{ printf "round %d: roots %.2f s wall %.2f s CPU (%d MiB), spatch %.2f s wall %.2f s CPU (%d MiB)\n", r, $1, $2 + $3, $4 / 1024, $5, $6 + $7, $8 / 1024 }' \
		<(tail -n 1 "$out/rounds")
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
rw=$(awk '{ print $1 }' "$out/rounds" | median)
sw=$(awk '{ print $5 }' "$out/rounds" | median)
rc=$(awk '{ print $2 + $3 }' "$out/rounds" | median)
sc=$(awk '{ print $6 + $7 }' "$out/rounds" | median)
ratio=$(awk '{ printf "%.3f\n", $1 / $5 }' "$out/rounds" | median)
printf 'roots  %.2f s wall, %.2f s CPU (median of %d)\n' "$rw" "$rc" "$rounds"
printf 'spatch %.2f s wall, %.2f s CPU (ethtool_ops only)\n' "$sw" "$sc"
printf 'roots/spatch wall: %.2fx (median of the per-round ratios; target < 1)\n' "$ratio"
echo "roots: $(wc -l <"$out/roots.txt") lines"

echo "== spatch -j 2, the other queries (for recall)"
for q in $queries; do
	[ "$q" = ethtool_ops ] && continue
	/usr/bin/time -f "spatch $q: %e s wall, %U s user CPU, %M KiB peak RSS" \
		spatch -j 2 --very-quiet --sp-file "$root/fgft-cc/tests/cocci/$q.cocci" \
		--dir "$tree" >"$out/$q.txt" 2>"$out/$q.err" || {
		echo "spatch $q failed:"; tail -5 "$out/$q.err"; }
	# spatch prints its timing line on stderr through /usr/bin/time.
	grep '^spatch ' "$out/$q.err" || true
done

echo "== recall of roots against spatch (function fields)"
python3 - "$root/fgft-cc/tables/slots.toml" "$tree" "$out" $queries <<'PY'
import sys, tomllib, os
table, tree, out, queries = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
structs = tomllib.load(open(table, "rb"))["struct"]
def norm(l):
    # roots prints paths as given (under the tree argument), spatch too.
    fn, slot, at = l.split()
    f, line = at.rsplit(":", 1)
    return f"{fn} {slot} {os.path.normpath(f)}:{line}"
roots = set(norm(l) for l in open(os.path.join(out, "roots.txt")) if len(l.split()) == 3)
total = found = 0
missed = []
for q in queries:
    fns = set(structs[q]["functions"])
    qt = qf = 0
    for l in open(os.path.join(out, q + ".txt")):
        w = l.split()
        if len(w) != 4:
            continue
        f, line, fn, field = w
        if fn == "NULL" or field not in fns:
            continue
        key = f"{fn} {q}.{field} {os.path.normpath(f)}:{line}"
        qt += 1
        if key in roots:
            qf += 1
        else:
            missed.append(key)
    print(f"{q}: {qf}/{qt} = {100.0 * qf / max(qt, 1):.2f}%")
    total += qt
    found += qf
print(f"all: {found}/{total} = {100.0 * found / max(total, 1):.2f}%")
for m in missed[:20]:
    print("missed:", m)
PY
