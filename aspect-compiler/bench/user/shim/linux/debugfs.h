/* SPDX-License-Identifier: GPL-2.0 */
/* User-space shim: debugfs does nothing; attributes keep their get/set. */
#ifndef FGFT_SHIM_DEBUGFS_H
#define FGFT_SHIM_DEBUGFS_H
#include <linux/fs.h>

struct dentry {
	int unused;
};

#define DEFINE_DEBUGFS_ATTRIBUTE(name, g, s, fmt) \
	static const struct file_operations name = { .get = (g), .set = (s) }
static inline struct dentry *debugfs_lookup(const char *n, struct dentry *p)
{
	(void)n; (void)p;
	return NULL;
}
static inline struct dentry *debugfs_create_dir(const char *n, struct dentry *p)
{
	static struct dentry d;

	(void)n; (void)p;
	return &d;
}
static inline struct dentry *debugfs_create_file(const char *n, unsigned short mode,
						 struct dentry *p, void *data,
						 const struct file_operations *f)
{
	(void)n; (void)mode; (void)p; (void)data; (void)f;
	return NULL;
}
#define debugfs_create_file_unsafe debugfs_create_file
static inline void debugfs_remove(struct dentry *d)
{
	(void)d;
}
static inline void dput(struct dentry *d)
{
	(void)d;
}
#endif
