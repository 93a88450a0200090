// SPDX-License-Identifier: GPL-2.0
/*
 * A tiny misc driver for the split tests: its isolated ioctl links an item
 * into a driver list with list_add(), an inline kernel helper.  Split, the
 * SFI copy must check the stores list_add() makes.  It does so with bottom
 * halves disabled and counts inside an RCU read-side section: sections
 * without a lock word, tracked by the runtime.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/slab.h>
#include <linux/rcupdate.h>
#include <linux/bottom_half.h>

struct listdemo_item {
	struct list_head node;
	unsigned long value;
};

struct listdemo {
	struct miscdevice misc;
	struct list_head items;
	struct listdemo_item spare;
	unsigned int count;
};

static struct listdemo listdemo_dev;

static long listdemo_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct listdemo *ld = container_of(file->private_data,
					   struct listdemo, misc);

	ld->spare.value = arg;
	local_bh_disable();
	list_add(&ld->spare.node, &ld->items);
	local_bh_enable();
	rcu_read_lock();
	ld->count++;
	rcu_read_unlock();
	return ld->count;
}

static const struct file_operations listdemo_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = listdemo_ioctl,
};

static int __init listdemo_init(void)
{
	INIT_LIST_HEAD(&listdemo_dev.items);
	listdemo_dev.misc.minor = MISC_DYNAMIC_MINOR;
	listdemo_dev.misc.name = "listdemo";
	listdemo_dev.misc.fops = &listdemo_fops;
	return misc_register(&listdemo_dev.misc);
}

static void __exit listdemo_exit(void)
{
	misc_deregister(&listdemo_dev.misc);
}

module_init(listdemo_init);
module_exit(listdemo_exit);
MODULE_LICENSE("GPL");
