#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# fgft: range checks inlined into an SFI unit.
#
# gcc runs its compiler proper through this script (gcc -wrapper sh,THIS).
# Everything else passes through untouched.  When cc1 writes assembly, each
# call of __asan_{load,store}{1,2,4,8,16}_noabort, the range check the
# sanitizer put before an access, becomes a check of this cpu's windows
# (fgft_win in fgft_rt: the last two grants that allowed a load, and a
# store, of the body running here):
#
#	a = addr + n; carry: call the runtime
#	a <= end0 and addr >= start0, or a <= end1 and addr >= start1: done
#	else call the runtime
#
# The call stays in place for a miss, so what is checked does not change,
# only where: a hit costs two to four loads and compares instead of a
# call.  The address is in %rdi at the call, and a call may clobber %rax
# and the flags, so the inline code is free to use them.
#
# fgft_win (struct fgft_pcwin, pairs of start and end): loads 0 and 16,
# stores 32 and 48.

case "${1##*/}" in
cc1) ;;
*) exec "$@" ;;
esac

out=
prev=
for a; do
	case "$a" in
	-E|-M|-MM|-fsyntax-only) exec "$@" ;;
	esac
	[ "$prev" = "-o" ] && out=$a
	prev=$a
done

fgft_inline() {
	cat <<'EOF'
	.macro fgft_chk fn, n, w
	movq %rdi, %rax
	addq $\n, %rax
	jc .Lfgft_miss\@
	cmpq %gs:fgft_win+\w+8, %rax
	ja .Lfgft_second\@
	cmpq %gs:fgft_win+\w, %rdi
	jae .Lfgft_hit\@
.Lfgft_second\@:
	cmpq %gs:fgft_win+\w+24, %rax
	ja .Lfgft_miss\@
	cmpq %gs:fgft_win+\w+16, %rdi
	jae .Lfgft_hit\@
.Lfgft_miss\@:
	call \fn
.Lfgft_hit\@:
	.endm
EOF
	sed -E \
		-e 's/^\tcall\t(__asan_load(1|2|4|8|16)_noabort)$/\tfgft_chk \1, \2, 0/' \
		-e 's/^\tcall\t(__asan_store(1|2|4|8|16)_noabort)$/\tfgft_chk \1, \2, 32/'
}

if [ -z "$out" ] || [ "$out" = "-" ]; then
	# gcc -pipe: the assembly goes to standard output.
	tmp=$(mktemp) || exit 1
	if ! "$@" > "$tmp"; then
		rm -f "$tmp"
		exit 1
	fi
	fgft_inline < "$tmp"
	rc=$?
	rm -f "$tmp"
	exit $rc
fi

"$@" || exit $?
fgft_inline < "$out" > "$out.fgft" && mv "$out.fgft" "$out"
