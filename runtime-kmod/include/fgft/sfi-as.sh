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
# Before that, a load check becomes a store check when the code after it
# stores to the address it checked before the address can change: gcc's
# sanitizer checks a location once for a load and a store (a use of memory
# that is valid for one is valid for the other), so the store of a
# read-modify-write (x->n--, le16_add_cpu(), a bitfield) has no check of
# its own, and would go unchecked and, in a transaction that logs its
# stores, unlogged.  Two ways find such a check:
#
#	the access right after it (past register moves and stack reloads) is
#	a store of its width: a read-modify-write in one instruction, whatever
#	%rdi came from;
#	the operand %rdi was set to (a leaq, or a movq of a register) is
#	followed through straight-line code: a store to the same operand
#	converts it; a write to one of its registers, a call that clobbers
#	them, a jmp or a ret ends the search.  A conditional branch does not:
#	the check then asks for the store's rights on both ways, which the
#	grant has whenever the code stores there.
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
# The kernel functions whose direct calls go to the runtime's checked forms
# (sfi-direct.list beside this script): `call NAME` and a tail call's
# `jmp NAME` become calls of fgft_d_NAME.
direct=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "${0%/*}/sfi-direct.list" |
	tr -d ' \t' | paste -sd '|')
case "$direct" in
''|*[!A-Za-z0-9_\|]*)
	echo "${0}: no names, or a bad name, in ${0%/*}/sfi-direct.list" >&2
	exit 1
	;;
esac

# The load checks of locations the code then stores to, as store checks
# (see above); awk reads the assembly and buffers it while a check is open.
fgft_rmw=$(cat <<'EOF'
function reg64(r) {
	sub(/^%/, "", r)
	if (r ~ /^r[0-9]+[dwb]?$/) { sub(/[dwb]$/, "", r); return r }
	if (r ~ /^[abcd][lh]$/) return "r" substr(r, 1, 1) "x"
	if (r ~ /^[re]?[abcd]x$/) { sub(/^[re]/, "", r); return "r" r }
	if (r ~ /^[re]?(si|di|bp|sp)l?$/) { sub(/^[re]/, "", r); sub(/l$/, "", r); return "r" r }
	return r
}
function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}
function lastop(s,  i, d, c) {
	d = 0
	for (i = length(s); i > 0; i--) {
		c = substr(s, i, 1)
		if (c == ")") d++
		else if (c == "(") d--
		else if (c == "," && d == 0) return trim(substr(s, i + 1))
	}
	return trim(s)
}
function firstop(s,  i, d, c) {
	d = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == "(") d++
		else if (c == ")") d--
		else if (c == "," && d == 0) return trim(substr(s, 1, i - 1))
	}
	return trim(s)
}
# The registers the address of an operand uses, as " rbx r12 ".
function regs(op,  out, t) {
	out = " "
	while (match(op, /%[a-z0-9]+/)) {
		t = reg64(substr(op, RSTART, RLENGTH))
		out = out t " "
		op = substr(op, RSTART + RLENGTH)
	}
	return out
}
function flush(  i) {
	for (i = 1; i <= nb; i++) print buf[i]
	nb = 0
	np = 0
}
function drop(k) {
	pop[k] = ""
}
function live(  k, n) {
	n = 0
	for (k = 1; k <= np; k++) if (pop[k] != "") n++
	return n
}
BEGIN { nb = 0; np = 0; rdi = ""; jn = 0 }
{
	line = $0
	buf[++nb] = line
	if (line !~ /^\t[a-z]/) {
		if (live() == 0 && !jn) flush()
		next
	}
	mn = line; sub(/^\t/, "", mn); ops = mn
	sub(/[ \t].*$/, "", mn)
	if (ops ~ /[ \t]/) { sub(/^[^ \t]*[ \t]+/, "", ops); sub(/#.*$/, "", ops) } else ops = ""
	if (mn == "call") {
		jn = 0
		if (ops ~ /^__asan_load(1|2|4|8)_noabort$/) {
			jn = ops; sub(/^__asan_load/, "", jn); sub(/_.*$/, "", jn); jidx = nb
		}
		if (ops ~ /^__asan_load(1|2|4|8|16)_noabort$/ && rdi != "") {
			pop[++np] = rdi; pidx[np] = nb; pregs[np] = regs(rdi)
		} else if (ops ~ /^__asan_store(1|2|4|8|16)_noabort$/ && rdi != "") {
			for (k = 1; k <= np; k++) if (pop[k] == rdi) drop(k)
		} else {
			for (k = 1; k <= np; k++)
				if (pregs[k] ~ / r(ax|cx|dx|si|di|8|9|10|11) /) drop(k)
		}
		rdi = ""
		if (live() == 0 && !jn) flush()
		next
	}
	if (mn ~ /^(jmp|ret|ud2)/) {
		jn = 0
		rdi = ""
		flush()
		next
	}
	dst = lastop(ops)
	writes = mn ~ /^(mov|add|sub|and|or|xor|adc|sbb|inc|dec|neg|not|sh|sa|ro|rc|bts|btr|btc|xadd|xchg|cmpxchg|set|pop)/
	# The access right after a check is the one it checks: a store of its
	# width there (a read-modify-write) needs a store check, wherever
	# %rdi came from (a spilled address reloaded).
	# (Register moves and stack reloads in between are not accesses.)
	if (jn && ops ~ /\(/ && ops !~ /\(%rsp/) {
		if (writes && dst ~ /\(/ && \
		    substr(mn, length(mn)) == substr("bw l   q", jn, 1))
			sub(/__asan_load/, "__asan_store", buf[jidx])
		jn = 0
	}
	if (writes && dst ~ /\(/) {
		for (k = 1; k <= np; k++)
			if (pop[k] != "" && pop[k] == dst) {
				sub(/__asan_load/, "__asan_store", buf[pidx[k]])
				drop(k)
			}
	}
	if (mn ~ /^xchg/ && firstop(ops) ~ /\(/) {
		for (k = 1; k <= np; k++)
			if (pop[k] != "" && pop[k] == firstop(ops)) {
				sub(/__asan_load/, "__asan_store", buf[pidx[k]])
				drop(k)
			}
	}
	# A register written: the checks of addresses through it end.
	if (mn !~ /^(cmp|test|push|bt[wlq]?$|j)/ && dst ~ /^%/) {
		r = reg64(dst)
		for (k = 1; k <= np; k++) if (index(pregs[k], " " r " ")) drop(k)
		if (r == "rdi") rdi = ""
	}
	if (mn !~ /^(mov|add|sub|and|or|xor|lea|cmp|test|push|j|inc|dec|neg|not|sh|sa|ro|bt|set|cmov)/) {
		# Anything else may write registers it does not name.
		for (k = 1; k <= np; k++)
			if (pregs[k] ~ / r(ax|cx|dx|si|di) /) drop(k)
	}
	if (mn ~ /^lea/ && dst == "%rdi") rdi = firstop(ops)
	else if (mn == "movq" && dst == "%rdi" && firstop(ops) ~ /^%r/) rdi = "(" firstop(ops) ")"
	if (live() == 0 && !jn) flush()
}
END { flush() }
EOF
)

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
	awk "$fgft_rmw" | sed -E \
		-e 's/^\tcall\t(__asan_load(1|2|4|8|16)_noabort)$/\tfgft_ld \1, \2/' \
		-e 's/^\tcall\t(__asan_store(1|2|4|8|16)_noabort)$/\tfgft_st \1, \2/' \
		-e 's/^\tcall\t(__asan_loadN_noabort)$/\tfgft_ldn \1/' \
		-e 's/^\tcall\t(__asan_storeN_noabort)$/\tfgft_stn \1/' \
		-e 's/^\tcall\t(__(asan|hwasan)_(memcpy|memmove))$/\tfgft_mcp \1, \3/' \
		-e 's/^\tcall\t(__(asan|hwasan)_memset)$/\tfgft_mset \1/' \
		-e "s/^\\t(call|jmp)\\t($direct)\$/\\t\\1\\tfgft_d_\\2/"
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
