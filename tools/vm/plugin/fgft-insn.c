// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-insn: a QEMU TCG plugin that counts the guest instructions each
 * translation block's start address executes, between marks.
 *
 * QEMU loads it with
 *   -plugin PATH,out=FILE
 * Every translated block adds its instruction count to a counter of its
 * start address (an inline add, no call); the guest's user space shares
 * one counter, address 0 (what a benchmark wants is the kernel's and the
 * modules' code, and every process maps the same addresses).  A mark is the
 * instruction `xchg %bx,%bx` (66 87 db, the guest tool fgft-insnmark)
 * executed in user space: then the counters since the previous mark go to
 * FILE as
 *   mark SEQ
 *   ADDR INSNS        (hex address, decimal count; nonzero counters only)
 * and start again from zero; SEQ counts from 1.  What runs after the last
 * mark is written as mark 0 when QEMU exits.
 *
 * Instructions are what TCG executes for the guest, so they do not include
 * the time QEMU spends emulating devices, nor idle time (a halted cpu runs
 * none); two vCPUs may add to one counter at the same time, and one of the
 * two adds may then be lost.  The host-side reader is tools/vm/src/insn.rs.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu-plugin-api.h"

FGFT_PLUGIN_EXPORT int qemu_plugin_version = FGFT_QEMU_PLUGIN_VERSION;

/* Open addressing over start addresses; a power of two. */
#define SLOTS (1u << 20)
#define USER_TOP 0x0000800000000000ull

struct counter {
	uint64_t addr;
	uint64_t insns;
	bool used;
};

static struct counter *table;
static unsigned int nused;
static FILE *out;
static unsigned int seq;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static const unsigned char mark_bytes[] = { 0x66, 0x87, 0xdb };

/* The counter of @addr, added if new; NULL when the table is full. */
static struct counter *counter_of(uint64_t addr)
{
	uint64_t h = addr * 0x9e3779b97f4a7c15ull;
	unsigned int i = (unsigned int)(h >> 44) & (SLOTS - 1);
	unsigned int n;

	for (n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1)) {
		struct counter *c = &table[i];

		if (c->used && c->addr == addr)
			return c;
		if (!c->used) {
			if (nused + 1 >= SLOTS / 2)
				return NULL;
			c->used = true;
			c->addr = addr;
			nused++;
			return c;
		}
	}
	return NULL;
}

/* Writes the counters since the last mark as mark @n, and clears them. */
static void dump(unsigned int n)
{
	unsigned int i;

	fprintf(out, "mark %u\n", n);
	for (i = 0; i < SLOTS; i++) {
		struct counter *c = &table[i];

		if (!c->used || !c->insns)
			continue;
		fprintf(out, "%" PRIx64 " %" PRIu64 "\n", c->addr, c->insns);
		c->insns = 0;
	}
	fflush(out);
}

static void on_mark(unsigned int vcpu, void *data)
{
	(void)vcpu;
	(void)data;
	pthread_mutex_lock(&lock);
	dump(++seq);
	pthread_mutex_unlock(&lock);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t addr = qemu_plugin_tb_vaddr(tb);
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct counter *c;
	size_t i;

	(void)id;
	if (addr < USER_TOP) {
		for (i = 0; i < n; i++) {
			struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

			if (qemu_plugin_insn_size(insn) == sizeof(mark_bytes) &&
			    !memcmp(qemu_plugin_insn_data(insn), mark_bytes,
				    sizeof(mark_bytes)))
				qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark,
								       FGFT_PLUGIN_CB_NO_REGS,
								       NULL);
		}
		addr = 0;
	}
	pthread_mutex_lock(&lock);
	c = counter_of(addr);
	pthread_mutex_unlock(&lock);
	if (c)
		qemu_plugin_register_vcpu_tb_exec_inline(tb, FGFT_PLUGIN_INLINE_ADD_U64,
							 &c->insns, n);
}

static void on_qemu_exit(qemu_plugin_id_t id, void *data)
{
	(void)id;
	(void)data;
	pthread_mutex_lock(&lock);
	dump(0);
	fclose(out);
	out = NULL;
	pthread_mutex_unlock(&lock);
}

FGFT_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const void *info, int argc,
					   char **argv)
{
	const char *path = NULL;
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
	}
	if (!path) {
		fprintf(stderr, "fgft-insn: no out=FILE argument\n");
		return -1;
	}
	table = calloc(SLOTS, sizeof(*table));
	out = fopen(path, "w");
	if (!table || !out) {
		fprintf(stderr, "fgft-insn: cannot open %s\n", path);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
	return 0;
}
