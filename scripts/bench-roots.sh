#!/usr/bin/env bash
# Benchmark (not a test) for `fgft-cc roots` on a kernel tree, default
# $SRC612/drivers/net, all in one run on this machine:
#   - parse health: share of top-level functions with no ERROR/MISSING node,
#     raw tree-sitter-c against fgft's macro hints, and parse speed;
#   - `fgft-cc roots` wall time and peak RSS;
#   - `spatch -j 2` wall time for the ethtool_ops query (the issue's yardstick),
#     then the other three queries, and the recall of roots against all four
#     (function fields only: `.name = DRV_NAME` is no slot).
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

echo "== fgft-cc roots"
/usr/bin/time -f "roots: %e s wall, %U s user CPU, %M KiB peak RSS" \
	"$bin/fgft-cc" roots "$tree" >"$out/roots.txt"
echo "roots: $(wc -l <"$out/roots.txt") lines"

echo "== spatch -j 2"
for q in $queries; do
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
roots = set(l.strip() for l in open(os.path.join(out, "roots.txt")))
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
        rel = os.path.relpath(f, tree)
        key = f"{fn} {q}.{field} {rel}:{line}"
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
