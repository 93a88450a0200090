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
# A check of n bytes that the compiler only knows at run time
# (__asan_{load,store}N_noabort: the address in %rdi, n in %rsi, a memcpy
# it expands inline) tries the windows and the stack the 16-byte way, with
# %rsi for n.
#
# A memcpy, memmove or memset the compiler hands to the runtime
# (__asan_mem*, __hwasan_mem*: destination %rdi, source %rsi, length %rdx)
# calls the kernel's own function instead when the windows or the stack
# allow the whole destination for a store and the whole source for a load;
# the checks use %rax, %rcx and %r8, which the call clobbers anyway.
#
# The call stays in place for a miss, so what is checked does not change,
# only where: a hit costs two loads and one compare (one branch) per window
# tried instead of a call.  The address is in %rdi at the call, and a call
# may clobber %rax, %rcx, %rdx and the flags, so the inline code is free to
# use them.
#
# A load of up to 8 bytes that no window allows then tries its site's own
# cache: each such check site has a number (counted through the unit from a
# salt taken from the source file's name, modulo FGFT_SITES of runtime.h,
# 512), and this cpu's site
# caches (the pointer fgft_win.sites) hold, per number, the read window
# that allowed the site's last load that called the runtime: start and
# lim8, one compare.  A loop that reads more objects than there are windows
# (a directory scan reads the inode, the super block, its private info, the
# buffer head and the entry) thrashes the windows, not the sites.  On a
# miss the site's number goes to the runtime in %rsi (the second argument;
# the call clobbers it anyway), which fills the cache.  Whatever site a
# cache is filled for, it holds a range the running body may read, and the
# runtime empties the caches whenever it empties the windows.
#
# Then the body's stack, [%rsp, stack_hi) the same way (stack_hi 0: none).
#
# fgft_win (struct fgft_pcwin): four load windows of (start, span + 1,
# lim8), 24 bytes each, two store windows at 96, stack_hi at 144, the
# site caches' pointer at 168.

case "${1##*/}" in
cc1) ;;
*) exec "$@" ;;
esac

out=
prev=
src=
for a; do
	case "$a" in
	-E|-M|-MM|-fsyntax-only) exec "$@" ;;
	*.c|*.i) [ -z "$src" ] && src=${a##*/} ;;
	esac
	[ "$prev" = "-o" ] && out=$a
	prev=$a
done
# The number of site caches per cpu: FGFT_SITES of runtime.h, beside this
# script (a site's number indexes the table inline, so it must be below).
sites=$(sed -n 's/^#define FGFT_SITES[[:space:]]*\([0-9][0-9]*\)$/\1/p' \
	"${0%/*}/runtime.h")
if [ -z "$sites" ]; then
	echo "${0}: no FGFT_SITES in ${0%/*}/runtime.h" >&2
	exit 1
fi
salt=$(( $(printf '%s' "$src" | cksum | cut -d' ' -f1) % sites ))

fgft_inline() {
	printf '\t.set .Lfgft_sn, %d\n\t.set .Lfgft_nsites, %d\n' "$salt" "$sites"
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
	.if \n <= 8
	movq %gs:fgft_win+168, %rax
	movq %rdi, %rdx
	subq .Lfgft_sn*16(%rax), %rdx
	cmpq .Lfgft_sn*16+8(%rax), %rdx
	jb .Lfgft_hit\@
	.endif
	fgft_sk \n
	jb .Lfgft_hit\@
	.if \n <= 8
	movl $.Lfgft_sn, %esi
	.endif
	call \fn
	.set .Lfgft_sn, (.Lfgft_sn + 1) % .Lfgft_nsites
.Lfgft_hit\@:
	.endm
	.macro fgft_wcr o, a, n
	movq \a, %rax
	subq %gs:fgft_win+\o, %rax
	movq %gs:fgft_win+\o+8, %r8
	subq \n, %r8
	sbbq %rcx, %rcx
	orq %rcx, %rax
	cmpq %r8, %rax
	.endm
	.macro fgft_skr a, n
	movq \a, %rax
	subq %rsp, %rax
	leaq -1(%rsp,\n), %rcx
	movq %gs:fgft_win+144, %r8
	subq %rcx, %r8
	sbbq %rcx, %rcx
	orq %rcx, %rax
	cmpq %r8, %rax
	.endm
	.macro fgft_rd a, n, ok
	fgft_wcr 0, \a, \n
	jb \ok
	fgft_wcr 24, \a, \n
	jb \ok
	fgft_wcr 48, \a, \n
	jb \ok
	fgft_wcr 72, \a, \n
	jb \ok
	fgft_skr \a, \n
	jb \ok
	.endm
	.macro fgft_wr a, n, ok
	fgft_wcr 96, \a, \n
	jb \ok
	fgft_wcr 120, \a, \n
	jb \ok
	fgft_skr \a, \n
	jb \ok
	.endm
	.macro fgft_ldn fn
	fgft_rd %rdi, %rsi, .Lfgft_hit\@
	call \fn
.Lfgft_hit\@:
	.endm
	.macro fgft_stn fn
	fgft_wr %rdi, %rsi, .Lfgft_hit\@
	call \fn
.Lfgft_hit\@:
	.endm
	.macro fgft_mcp fn, plain
	fgft_wr %rdi, %rdx, .Lfgft_dst\@
	jmp .Lfgft_call\@
.Lfgft_dst\@:
	fgft_rd %rsi, %rdx, .Lfgft_ok\@
.Lfgft_call\@:
	call \fn
	jmp .Lfgft_done\@
.Lfgft_ok\@:
	call \plain
.Lfgft_done\@:
	.endm
	.macro fgft_mset fn
	fgft_wr %rdi, %rdx, .Lfgft_ok\@
	call \fn
	jmp .Lfgft_done\@
.Lfgft_ok\@:
	call memset
.Lfgft_done\@:
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
		-e 's/^\tcall\t(__asan_store(1|2|4|8|16)_noabort)$/\tfgft_st \1, \2/' \
		-e 's/^\tcall\t(__asan_loadN_noabort)$/\tfgft_ldn \1/' \
		-e 's/^\tcall\t(__asan_storeN_noabort)$/\tfgft_stn \1/' \
		-e 's/^\tcall\t(__(asan|hwasan)_(memcpy|memmove))$/\tfgft_mcp \1, \3/' \
		-e 's/^\tcall\t(__(asan|hwasan)_memset)$/\tfgft_mset \1/'
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
