/* SPDX-License-Identifier: GPL-2.0 */
/* User-space shim: seq_file prints to stdout. */
#ifndef FGFT_SHIM_SEQ_FILE_H
#define FGFT_SHIM_SEQ_FILE_H
#include <stdio.h>
#include <linux/fs.h>

struct seq_file {
	int unused;
};

#define seq_printf(m, ...) ((void)(m), printf(__VA_ARGS__))
static inline int single_open(struct file *f, int (*show)(struct seq_file *, void *), void *d)
{
	struct seq_file m;

	(void)f;
	return show(&m, d);
}
static inline ssize_t seq_read(struct file *f, char *b, size_t n, loff_t *p)
{
	(void)f; (void)b; (void)p;
	return (ssize_t)n;
}
static inline loff_t seq_lseek(struct file *f, loff_t o, int w)
{
	(void)f; (void)w;
	return o;
}
static inline int single_release(struct inode *i, struct file *f)
{
	(void)i; (void)f;
	return 0;
}
#define DEFINE_SHOW_ATTRIBUTE(name) \
	static const struct file_operations name##_fops = { .show = name##_show }
#endif
