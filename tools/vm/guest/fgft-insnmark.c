// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-insnmark: a mark for the instruction-counting QEMU plugin
 * (tools/vm/plugin/fgft-insn.c).  It executes `xchg %bx,%bx` once, the
 * instruction the plugin watches for in user space: the plugin then writes
 * the guest's instruction counts since the previous mark and starts again.
 * Without the plugin the instruction changes nothing.
 */
int main(void)
{
	__asm__ volatile("xchg %%bx, %%bx" : : : "memory");
	return 0;
}
