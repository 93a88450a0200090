// SPDX-License-Identifier: GPL-2.0
/*
 * User-space static keys: patch every site of a key between a 5-byte NOP
 * and a jmp to its unlikely branch, as the kernel's jump labels do.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/jump_label.h>

struct fgft_jump_entry {
	unsigned long code;
	unsigned long target;
	unsigned long key;
};

extern struct fgft_jump_entry __start_fgft_jump_table[];
extern struct fgft_jump_entry __stop_fgft_jump_table[];

static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

static void patch(struct static_key_false *key, int on)
{
	long page = sysconf(_SC_PAGESIZE);
	struct fgft_jump_entry *e;

	for (e = __start_fgft_jump_table; e < __stop_fgft_jump_table; e++) {
		unsigned char insn[5];
		unsigned long start = e->code & ~(page - 1);
		int rel = (int)(e->target - (e->code + 5));

		if (e->key != (unsigned long)key)
			continue;
		if (on) {
			insn[0] = 0xe9;
			memcpy(insn + 1, &rel, 4);
		} else {
			memcpy(insn, nop5, 5);
		}
		mprotect((void *)start, 2 * page, PROT_READ | PROT_WRITE | PROT_EXEC);
		memcpy((void *)e->code, insn, 5);
		mprotect((void *)start, 2 * page, PROT_READ | PROT_EXEC);
	}
	key->enabled = on;
}

void static_branch_enable(struct static_key_false *key)
{
	patch(key, 1);
}

void static_branch_disable(struct static_key_false *key)
{
	patch(key, 0);
}
