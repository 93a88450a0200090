#!/usr/bin/env bash
# Runs the kernel's checkpatch.pl (from linux-source-6.12) over every C file we
# write ourselves.  Fails on any error or warning.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/setup.sh --print-env)"
cp=$SRC612/scripts/checkpatch.pl
files=$(git ls-files -- 'runtime-kmod/*.[ch]' 'corpus/drivers/*.[ch]' \
	'annotations/include/*.h' 'tests/vm/guest/*.c' 'tests/vm/fixtures/*.[ch]' |
	grep -v '/ustest/' || true)
[ -z "$files" ] && { echo "checkpatch: no C files yet"; exit 0; }
fail=0
for f in $files; do
	out=$(perl "$cp" --no-tree --quiet --show-types --ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES -f "$f" 2>&1) || true
	if echo "$out" | grep -qE '^(ERROR|WARNING)'; then
		echo "$out"
		fail=1
	fi
done
n=$(echo "$files" | wc -l)
if [ $fail -ne 0 ]; then
	echo "checkpatch: problems found"
	exit 1
fi
echo "checkpatch: $n files clean"
