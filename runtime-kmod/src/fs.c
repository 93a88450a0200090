// SPDX-License-Identifier: GPL-2.0
/*
 * fgft runtime: helpers the compensation table's file-system entries call
 * (issue 17).  A file system's operations run in place, their stores
 * logged; what the kernel changes on their behalf is compensated by the
 * wrappers, with these helpers where one expression is not enough.
 */
#include <linux/fs.h>
#include <linux/pagemap.h>
#include <fgft/runtime.h>

/*
 * Before a truncation inside a transaction: writes back the dirty page
 * cache past @newsize, so that an abort, which puts the size back, finds
 * that data on disk (truncate_setsize() drops those pages).  Returns the
 * size the inode had, for the undo.
 */
long fgft_fs_keep_tail(struct inode *inode, loff_t newsize)
{
	loff_t old = i_size_read(inode);

	if (newsize < old)
		filemap_write_and_wait_range(inode->i_mapping, newsize, LLONG_MAX);
	return old;
}
EXPORT_SYMBOL_GPL(fgft_fs_keep_tail);

void fgft_new_inode_unhash(struct inode *inode)
{
	remove_inode_hash(inode);
	if (READ_ONCE(inode->i_state) & I_NEW)
		unlock_new_inode(inode);
}
EXPORT_SYMBOL_GPL(fgft_new_inode_unhash);
