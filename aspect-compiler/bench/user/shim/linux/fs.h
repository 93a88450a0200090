/* SPDX-License-Identifier: GPL-2.0 */
/* User-space shim: just enough of files for debugfs attributes. */
#ifndef FGFT_SHIM_FS_H
#define FGFT_SHIM_FS_H
#include <linux/types.h>

struct inode;
struct file;
struct module;
struct seq_file;

struct file_operations {
	struct module *owner;
	int (*open)(struct inode *, struct file *);
	ssize_t (*read)(struct file *, char *, size_t, loff_t *);
	ssize_t (*write)(struct file *, const char *, size_t, loff_t *);
	loff_t (*llseek)(struct file *, loff_t, int);
	int (*release)(struct inode *, struct file *);
	int (*get)(void *, u64 *);
	int (*set)(void *, u64);
	int (*show)(struct seq_file *, void *);
};
#endif
