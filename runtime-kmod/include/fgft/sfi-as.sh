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
# store, of the body running here), each kept per access size n as a base
# and a limit (src/fgft_internal.h):
#
#	addr - base0 <= lim0 or addr - base1 <= lim1 (unsigned): done
#	else call the runtime
#
# The call stays in place for a miss, so what is checked does not change,
# only where: a hit costs two to four loads and one or two compares (one
# branch per window) instead of a call.  The address is in %rdi at the
# call, and a call may clobber %rax and the flags, so the inline code is
# free to use them.
#
# fgft_win (struct fgft_pcwin): two load windows of five (base, limit)
# pairs, 80 bytes each, then two store windows; the size's pair is at
# 16 * log2(n).

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
	.macro fgft_chk fn, o
	movq %rdi, %rax
	subq %gs:fgft_win+\o, %rax
	cmpq %gs:fgft_win+\o+8, %rax
	jbe .Lfgft_hit\@
	movq %rdi, %rax
	subq %gs:fgft_win+\o+80, %rax
	cmpq %gs:fgft_win+\o+88, %rax
	jbe .Lfgft_hit\@
	call \fn
.Lfgft_hit\@:
	.endm
EOF
	sed -E \
		-e 's/^\tcall\t(__asan_load1_noabort)$/\tfgft_chk \1, 0/' \
		-e 's/^\tcall\t(__asan_load2_noabort)$/\tfgft_chk \1, 16/' \
		-e 's/^\tcall\t(__asan_load4_noabort)$/\tfgft_chk \1, 32/' \
		-e 's/^\tcall\t(__asan_load8_noabort)$/\tfgft_chk \1, 48/' \
		-e 's/^\tcall\t(__asan_load16_noabort)$/\tfgft_chk \1, 64/' \
		-e 's/^\tcall\t(__asan_store1_noabort)$/\tfgft_chk \1, 160/' \
		-e 's/^\tcall\t(__asan_store2_noabort)$/\tfgft_chk \1, 176/' \
		-e 's/^\tcall\t(__asan_store4_noabort)$/\tfgft_chk \1, 192/' \
		-e 's/^\tcall\t(__asan_store8_noabort)$/\tfgft_chk \1, 208/' \
		-e 's/^\tcall\t(__asan_store16_noabort)$/\tfgft_chk \1, 224/'
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
