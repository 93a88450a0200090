/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space shim of static keys, built like the kernel's: each
 * static_branch_unlikely() site is a 5-byte NOP recorded in a jump table
 * (section fgft_jump_table); enabling a key patches its sites into a jmp to
 * the unlikely branch, disabling writes the NOP back.  Link with -no-pie.
 */
#ifndef FGFT_SHIM_JUMP_LABEL_H
#define FGFT_SHIM_JUMP_LABEL_H
#include <linux/compiler.h>
#include <linux/types.h>

struct static_key_false {
	int enabled;
};

#define DEFINE_STATIC_KEY_FALSE(name) struct static_key_false name = { 0 }
#define DECLARE_STATIC_KEY_FALSE(name) extern struct static_key_false name

static __always_inline bool fgft_shim_branch(struct static_key_false *key)
{
	__asm__ goto("1: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"
		     ".pushsection fgft_jump_table, \"aw\"\n\t"
		     ".balign 8\n\t"
		     ".quad 1b, %l[l_yes], %c0\n\t"
		     ".popsection\n\t"
		     : : "i" (key) : : l_yes);
	return false;
l_yes:
	return true;
}

#define static_branch_unlikely(k) fgft_shim_branch(k)
#define static_key_enabled(k) ((k)->enabled)
void static_branch_enable(struct static_key_false *key);
void static_branch_disable(struct static_key_false *key);
#endif
