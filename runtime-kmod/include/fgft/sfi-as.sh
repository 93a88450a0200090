#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# fgft: range checks inlined into an SFI unit.
#
# gcc runs its compiler proper through this script (gcc -wrapper sh,THIS).
# Everything else passes through untouched.  When cc1 writes assembly, each
# call of __asan_{load,store}{1,2,4,8,16}_noabort, the range check the
# sanitizer put before an access, becomes a check of this cpu's windows
# (fgft_win in fgft_rt: the last four grants that allowed a load, and two
# a store, of the body running here), each a start, a span plus one and
# lim8, the span less 7 (0 under 8 bytes; src/fgft_internal.h):
#
#	up to 8 bytes: addr - start < lim8 (unsigned), one load and one
#	compare;
#	16 bytes: addr - start < span + 1 - n, the right side not borrowing
#	(a borrow turns the left side into all ones, which nothing is below);
#	for one window: done, else call the runtime
#
# The call stays in place for a miss, so what is checked does not change,
# only where: a hit costs two loads and one compare (one branch) per window
# tried instead of a call.  The address is in %rdi at the call, and a call
# may clobber %rax, %rcx, %rdx and the flags, so the inline code is free to
# use them.
#
# Then the body's stack, [%rsp, stack_hi) the same way (stack_hi 0: none).
#
# fgft_win (struct fgft_pcwin): four load windows of (start, span + 1,
# lim8), 24 bytes each, two store windows at 96, stack_hi at 144.

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
	.macro fgft_wc o, n
	movq %rdi, %rax
	subq %gs:fgft_win+\o, %rax
	.if \n <= 8
	cmpq %gs:fgft_win+\o+16, %rax
	.else
	movq %gs:fgft_win+\o+8, %rdx
	subq $\n, %rdx
	sbbq %rcx, %rcx
	orq %rcx, %rax
	cmpq %rdx, %rax
	.endif
	.endm
	.macro fgft_sk n
	movq %rdi, %rax
	subq %rsp, %rax
	leaq \n-1(%rsp), %rcx
	movq %gs:fgft_win+144, %rdx
	subq %rcx, %rdx
	sbbq %rcx, %rcx
	orq %rcx, %rax
	cmpq %rdx, %rax
	.endm
	.macro fgft_ld fn, n
	fgft_wc 0, \n
	jb .Lfgft_hit\@
	fgft_wc 24, \n
	jb .Lfgft_hit\@
	fgft_wc 48, \n
	jb .Lfgft_hit\@
	fgft_wc 72, \n
	jb .Lfgft_hit\@
	fgft_sk \n
	jb .Lfgft_hit\@
	call \fn
.Lfgft_hit\@:
	.endm
	.macro fgft_st fn, n
	fgft_wc 96, \n
	jb .Lfgft_hit\@
	fgft_wc 120, \n
	jb .Lfgft_hit\@
	fgft_sk \n
	jb .Lfgft_hit\@
	call \fn
.Lfgft_hit\@:
	.endm
EOF
	sed -E \
		-e 's/^\tcall\t(__asan_load(1|2|4|8|16)_noabort)$/\tfgft_ld \1, \2/' \
		-e 's/^\tcall\t(__asan_store(1|2|4|8|16)_noabort)$/\tfgft_st \1, \2/'
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
