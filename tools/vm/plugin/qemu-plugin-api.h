/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of QEMU's TCG plugin interface (API version 1, QEMU 7.2 as
 * Debian 12 ships it) that fgft-insn.c uses, declared here because Debian
 * ships no development header for it.  The names and signatures are QEMU's
 * documented interface; QEMU resolves them when it loads the plugin.
 */
#ifndef FGFT_QEMU_PLUGIN_API_H
#define FGFT_QEMU_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#define FGFT_PLUGIN_EXPORT __attribute__((visibility("default")))
#define FGFT_QEMU_PLUGIN_VERSION 1

typedef uint64_t qemu_plugin_id_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;

/* enum qemu_plugin_cb_flags and enum qemu_plugin_op, by value. */
#define FGFT_PLUGIN_CB_NO_REGS 0
#define FGFT_PLUGIN_INLINE_ADD_U64 0

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index,
					    void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
						 size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      int op, void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    int flags, void *userdata);

#endif /* FGFT_QEMU_PLUGIN_API_H */
