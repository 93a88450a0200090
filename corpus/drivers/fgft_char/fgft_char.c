// SPDX-License-Identifier: GPL-2.0
/*
 * fgft_char: a byte FIFO character device (misc device /dev/fgft_char).
 *
 * write() appends to a ring buffer and read() consumes from it; a timer can
 * feed the ring with a counting pattern, like a device producing data.
 * Configuration (ring size, full-ring policy, label, generator) is reached
 * through ioctls, sysfs attributes of the misc device and module
 * parameters; FGFT_CHAR_SAVE and FGFT_CHAR_RESTORE checkpoint and restore
 * it. See fgft_char.h for the user interface.
 *
 * Locking: @lock (a mutex) serializes readers, writers and configuration
 * changes, and guards the bounce buffer used to copy from and to user
 * space; @ring_lock (a spinlock, taken with bottom halves off in process
 * context) guards the ring and the counters, which the generator timer
 * also updates.
 *
 * The entry points fgft isolates are listed in the sidecar, fgft_char.toml,
 * not in this file.
 */

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/wait.h>
#include <linux/log2.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "fgft_char.h"

#define DRV_NAME	"fgft_char"
#define FGFT_CHAR_BOUNCE	PAGE_SIZE
#define FGFT_CHAR_MAX_RATE	4096

static unsigned int ring_size = 4096;
module_param(ring_size, uint, 0444);
MODULE_PARM_DESC(ring_size, "initial ring size in bytes, a power of two (64 to 1 MiB)");

static bool overwrite;
module_param(overwrite, bool, 0444);
MODULE_PARM_DESC(overwrite, "start in overwrite mode: a full ring drops its oldest bytes");

static char *label = "fgft";
module_param(label, charp, 0444);
MODULE_PARM_DESC(label, "initial device label");

/* Configuration kept by FGFT_CHAR_SAVE. */
struct fgft_char_config {
	u32 size;
	u32 mode;
	char label[FGFT_CHAR_LABEL_LEN];
	struct fgft_char_pattern pattern;
};

struct fgft_char_dev {
	struct miscdevice misc;
	struct mutex lock;		/* users, configuration, bounce */
	spinlock_t ring_lock;		/* ring, counters, generator */
	u8 *ring;
	u32 size;			/* power of two */
	u32 head;			/* free-running write index */
	u32 tail;			/* free-running read index */
	u32 mode;
	char label[FGFT_CHAR_LABEL_LEN];
	struct fgft_char_pattern pattern;
	struct timer_list gen_timer;
	wait_queue_head_t readq;
	wait_queue_head_t writeq;
	struct fgft_char_stats stats;
	struct fgft_char_config saved;
	bool saved_valid;
	u8 *bounce;
};

static struct fgft_char_dev *fgft_char_from_dev(struct device *dev)
{
	struct miscdevice *misc = dev_get_drvdata(dev);

	return container_of(misc, struct fgft_char_dev, misc);
}

static struct fgft_char_dev *fgft_char_from_file(struct file *file)
{
	return container_of(file->private_data, struct fgft_char_dev, misc);
}

/* Ring primitives; the caller holds ring_lock. */

static u32 fgft_char_level(const struct fgft_char_dev *cd)
{
	return cd->head - cd->tail;
}

static u32 fgft_char_space(const struct fgft_char_dev *cd)
{
	return cd->size - fgft_char_level(cd);
}

/* Copies up to @n queued bytes to @dst without consuming them. */
static u32 fgft_char_peek(const struct fgft_char_dev *cd, u8 *dst, u32 n)
{
	u32 off = cd->tail & (cd->size - 1);
	u32 first;

	n = min(n, fgft_char_level(cd));
	first = min(n, cd->size - off);
	memcpy(dst, cd->ring + off, first);
	memcpy(dst + first, cd->ring, n - first);
	return n;
}

/* Drops up to @n queued bytes; returns how many. */
static u32 fgft_char_consume(struct fgft_char_dev *cd, u32 n)
{
	n = min(n, fgft_char_level(cd));
	cd->tail += n;
	return n;
}

/*
 * Appends up to @n bytes; in overwrite mode the oldest bytes make room,
 * otherwise only the free space is used. Returns the bytes stored.
 */
static u32 fgft_char_put(struct fgft_char_dev *cd, const u8 *src, u32 n)
{
	u32 off, first;

	if (cd->mode == FGFT_CHAR_MODE_OVERWRITE) {
		if (n > cd->size) {
			src += n - cd->size;
			cd->stats.bytes_dropped += n - cd->size;
			n = cd->size;
		}
		if (n > fgft_char_space(cd))
			cd->stats.bytes_dropped +=
				fgft_char_consume(cd, n - fgft_char_space(cd));
	} else {
		n = min(n, fgft_char_space(cd));
	}
	off = cd->head & (cd->size - 1);
	first = min(n, cd->size - off);
	memcpy(cd->ring + off, src, first);
	memcpy(cd->ring, src + first, n - first);
	cd->head += n;
	return n;
}

static bool fgft_char_readable(struct fgft_char_dev *cd)
{
	bool ret;

	spin_lock_bh(&cd->ring_lock);
	ret = fgft_char_level(cd) > 0;
	spin_unlock_bh(&cd->ring_lock);
	return ret;
}

static bool fgft_char_writable(struct fgft_char_dev *cd)
{
	bool ret;

	spin_lock_bh(&cd->ring_lock);
	ret = cd->mode == FGFT_CHAR_MODE_OVERWRITE || fgft_char_space(cd) > 0;
	spin_unlock_bh(&cd->ring_lock);
	return ret;
}

/* The generator: every tick, @rate counting bytes. */
static void fgft_char_generate(struct timer_list *t)
{
	struct fgft_char_dev *cd = from_timer(cd, t, gen_timer);
	u32 i, rate, stored = 0;
	bool rearm;

	spin_lock(&cd->ring_lock);
	rate = cd->pattern.rate;
	for (i = 0; i < rate; i++) {
		u8 b = cd->pattern.seed;

		if (!fgft_char_put(cd, &b, 1)) {
			cd->stats.bytes_dropped++;
			continue;
		}
		cd->pattern.seed++;
		stored++;
	}
	cd->stats.bytes_generated += stored;
	rearm = rate > 0;
	if (rearm)
		mod_timer(&cd->gen_timer,
			  jiffies + msecs_to_jiffies(cd->pattern.interval_ms));
	spin_unlock(&cd->ring_lock);

	if (stored)
		wake_up_interruptible(&cd->readq);
}

/* Starts, retunes or stops the generator. Caller holds cd->lock. */
static int fgft_char_apply_pattern(struct fgft_char_dev *cd,
				   const struct fgft_char_pattern *p)
{
	if (p->rate > FGFT_CHAR_MAX_RATE || (p->rate && !p->interval_ms))
		return -EINVAL;
	spin_lock_bh(&cd->ring_lock);
	cd->pattern = *p;
	memset(cd->pattern.pad, 0, sizeof(cd->pattern.pad));
	if (p->rate)
		mod_timer(&cd->gen_timer,
			  jiffies + msecs_to_jiffies(p->interval_ms));
	spin_unlock_bh(&cd->ring_lock);
	/* with the rate at 0 the callback no longer re-arms the timer */
	if (!p->rate)
		timer_delete_sync(&cd->gen_timer);
	return 0;
}

/*
 * Replaces the ring with one of @size bytes, keeping the newest queued
 * bytes that fit. Caller holds cd->lock.
 */
static int fgft_char_resize(struct fgft_char_dev *cd, u32 size)
{
	u8 *ring, *old;
	u32 level, keep;

	if (size < FGFT_CHAR_MIN_SIZE || size > FGFT_CHAR_MAX_SIZE ||
	    !is_power_of_2(size))
		return -EINVAL;
	ring = kvzalloc(size, GFP_KERNEL);
	if (!ring)
		return -ENOMEM;

	spin_lock_bh(&cd->ring_lock);
	level = fgft_char_level(cd);
	keep = min(level, size);
	cd->stats.bytes_dropped += fgft_char_consume(cd, level - keep);
	fgft_char_peek(cd, ring, keep);
	old = cd->ring;
	cd->ring = ring;
	cd->size = size;
	cd->tail = 0;
	cd->head = keep;
	spin_unlock_bh(&cd->ring_lock);

	kvfree(old);
	wake_up_interruptible(&cd->writeq);
	return 0;
}

static int fgft_char_set_mode(struct fgft_char_dev *cd, u32 mode)
{
	if (mode != FGFT_CHAR_MODE_BLOCK && mode != FGFT_CHAR_MODE_OVERWRITE)
		return -EINVAL;
	spin_lock_bh(&cd->ring_lock);
	cd->mode = mode;
	spin_unlock_bh(&cd->ring_lock);
	wake_up_interruptible(&cd->writeq);
	return 0;
}

/* Sets the label from @len bytes of @src, cut at a newline or a NUL. */
static int fgft_char_set_label(struct fgft_char_dev *cd, const char *src,
			       size_t len)
{
	char buf[FGFT_CHAR_LABEL_LEN];
	size_t n = strnlen(src, len);

	if (n && src[n - 1] == '\n')
		n--;
	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, src, n);
	buf[n] = '\0';
	strscpy(cd->label, buf, sizeof(cd->label));
	return 0;
}

/* Checkpoint and restore of the device configuration. */

static int fgft_char_checkpoint(struct fgft_char_dev *cd)
{
	mutex_lock(&cd->lock);
	spin_lock_bh(&cd->ring_lock);
	cd->saved.size = cd->size;
	cd->saved.mode = cd->mode;
	cd->saved.pattern = cd->pattern;
	spin_unlock_bh(&cd->ring_lock);
	strscpy(cd->saved.label, cd->label, sizeof(cd->saved.label));
	cd->saved_valid = true;
	mutex_unlock(&cd->lock);
	return 0;
}

static int fgft_char_restore(struct fgft_char_dev *cd)
{
	struct fgft_char_config cfg;
	int err = 0;

	mutex_lock(&cd->lock);
	if (!cd->saved_valid) {
		err = -ENODATA;
		goto out;
	}
	cfg = cd->saved;
	if (cfg.size != cd->size)
		err = fgft_char_resize(cd, cfg.size);
	if (!err)
		err = fgft_char_set_mode(cd, cfg.mode);
	if (!err)
		err = fgft_char_apply_pattern(cd, &cfg.pattern);
	if (!err)
		strscpy(cd->label, cfg.label, sizeof(cd->label));
out:
	mutex_unlock(&cd->lock);
	return err;
}

/* file_operations */

static int fgft_char_open(struct inode *inode, struct file *file)
{
	/*
	 * misc_open has set private_data to our miscdevice; the position of
	 * a new file starts at 0 bytes consumed.
	 */
	return 0;
}

static int fgft_char_release(struct inode *inode, struct file *file)
{
	return 0;
}

static ssize_t fgft_char_read(struct file *file, char __user *buf,
			      size_t count, loff_t *ppos)
{
	struct fgft_char_dev *cd = fgft_char_from_file(file);
	u32 n;
	int err;

	if (!count)
		return 0;
	if (mutex_lock_interruptible(&cd->lock))
		return -ERESTARTSYS;
	for (;;) {
		spin_lock_bh(&cd->ring_lock);
		n = fgft_char_peek(cd, cd->bounce, min_t(size_t, count,
							 FGFT_CHAR_BOUNCE));
		spin_unlock_bh(&cd->ring_lock);
		if (n)
			break;
		mutex_unlock(&cd->lock);
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		err = wait_event_interruptible(cd->readq,
					       fgft_char_readable(cd));
		if (err)
			return err;
		if (mutex_lock_interruptible(&cd->lock))
			return -ERESTARTSYS;
	}
	/* consume only what reached user space */
	if (copy_to_user(buf, cd->bounce, n)) {
		mutex_unlock(&cd->lock);
		return -EFAULT;
	}
	spin_lock_bh(&cd->ring_lock);
	fgft_char_consume(cd, n);
	cd->stats.bytes_read += n;
	cd->stats.reads++;
	spin_unlock_bh(&cd->ring_lock);
	*ppos += n;
	mutex_unlock(&cd->lock);

	wake_up_interruptible(&cd->writeq);
	return n;
}

static ssize_t fgft_char_write(struct file *file, const char __user *buf,
			       size_t count, loff_t *ppos)
{
	struct fgft_char_dev *cd = fgft_char_from_file(file);
	u32 n, stored;
	int err;

	if (!count)
		return 0;
	n = min_t(size_t, count, FGFT_CHAR_BOUNCE);
	if (mutex_lock_interruptible(&cd->lock))
		return -ERESTARTSYS;
	if (copy_from_user(cd->bounce, buf, n)) {
		mutex_unlock(&cd->lock);
		return -EFAULT;
	}
	for (;;) {
		spin_lock_bh(&cd->ring_lock);
		stored = fgft_char_put(cd, cd->bounce, n);
		if (stored) {
			cd->stats.bytes_written += stored;
			cd->stats.writes++;
		}
		spin_unlock_bh(&cd->ring_lock);
		if (stored)
			break;
		mutex_unlock(&cd->lock);
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		err = wait_event_interruptible(cd->writeq,
					       fgft_char_writable(cd));
		if (err)
			return err;
		if (mutex_lock_interruptible(&cd->lock))
			return -ERESTARTSYS;
	}
	/* the position counts consumed bytes only (see llseek) */
	mutex_unlock(&cd->lock);

	wake_up_interruptible(&cd->readq);
	return stored;
}

/*
 * The file position counts the bytes this file has consumed. Seeking
 * forward discards queued bytes (SEEK_END: up to the end of what is queued
 * now, plus a non-positive offset); seeking backward is not possible.
 */
static loff_t fgft_char_llseek(struct file *file, loff_t offset, int whence)
{
	struct fgft_char_dev *cd = fgft_char_from_file(file);
	loff_t target, skip;
	u32 level;

	mutex_lock(&cd->lock);
	spin_lock_bh(&cd->ring_lock);
	level = fgft_char_level(cd);
	switch (whence) {
	case SEEK_SET:
		target = offset;
		break;
	case SEEK_CUR:
		target = file->f_pos + offset;
		break;
	case SEEK_END:
		target = file->f_pos + level + offset;
		break;
	default:
		target = -1;
		break;
	}
	skip = target - file->f_pos;
	if (target < 0 || skip < 0 || skip > level) {
		spin_unlock_bh(&cd->ring_lock);
		mutex_unlock(&cd->lock);
		return -EINVAL;
	}
	fgft_char_consume(cd, skip);
	cd->stats.bytes_dropped += skip;
	spin_unlock_bh(&cd->ring_lock);
	file->f_pos = target;
	mutex_unlock(&cd->lock);

	if (skip)
		wake_up_interruptible(&cd->writeq);
	return target;
}

static long fgft_char_get_stats(struct fgft_char_dev *cd,
				struct fgft_char_stats __user *arg)
{
	struct fgft_char_stats st;

	spin_lock_bh(&cd->ring_lock);
	st = cd->stats;
	spin_unlock_bh(&cd->ring_lock);
	return copy_to_user(arg, &st, sizeof(st)) ? -EFAULT : 0;
}

static long fgft_char_reset(struct fgft_char_dev *cd)
{
	mutex_lock(&cd->lock);
	spin_lock_bh(&cd->ring_lock);
	cd->stats.bytes_dropped += fgft_char_consume(cd, fgft_char_level(cd));
	cd->head = 0;
	cd->tail = 0;
	spin_unlock_bh(&cd->ring_lock);
	mutex_unlock(&cd->lock);
	wake_up_interruptible(&cd->writeq);
	return 0;
}

static long fgft_char_get_u32(struct fgft_char_dev *cd, unsigned int cmd,
			      u32 __user *arg)
{
	u32 val;

	spin_lock_bh(&cd->ring_lock);
	switch (cmd) {
	case FGFT_CHAR_GET_SIZE:
		val = cd->size;
		break;
	case FGFT_CHAR_GET_LEVEL:
		val = fgft_char_level(cd);
		break;
	default:
		val = cd->mode;
		break;
	}
	spin_unlock_bh(&cd->ring_lock);
	return put_user(val, arg);
}

static long fgft_char_set_u32(struct fgft_char_dev *cd, unsigned int cmd,
			      u32 __user *arg)
{
	u32 val;
	long err;

	if (get_user(val, arg))
		return -EFAULT;
	mutex_lock(&cd->lock);
	if (cmd == FGFT_CHAR_SET_SIZE)
		err = fgft_char_resize(cd, val);
	else
		err = fgft_char_set_mode(cd, val);
	mutex_unlock(&cd->lock);
	return err;
}

static long fgft_char_pattern_ioctl(struct fgft_char_dev *cd, unsigned int cmd,
				    struct fgft_char_pattern __user *arg)
{
	struct fgft_char_pattern p;
	long err;

	if (cmd == FGFT_CHAR_GET_PATTERN) {
		spin_lock_bh(&cd->ring_lock);
		p = cd->pattern;
		spin_unlock_bh(&cd->ring_lock);
		return copy_to_user(arg, &p, sizeof(p)) ? -EFAULT : 0;
	}
	if (copy_from_user(&p, arg, sizeof(p)))
		return -EFAULT;
	mutex_lock(&cd->lock);
	err = fgft_char_apply_pattern(cd, &p);
	mutex_unlock(&cd->lock);
	return err;
}

static long fgft_char_label_ioctl(struct fgft_char_dev *cd, unsigned int cmd,
				  char __user *arg)
{
	char buf[FGFT_CHAR_LABEL_LEN];
	long err;

	if (cmd == FGFT_CHAR_GET_LABEL) {
		memset(buf, 0, sizeof(buf));
		mutex_lock(&cd->lock);
		strscpy(buf, cd->label, sizeof(buf));
		mutex_unlock(&cd->lock);
		return copy_to_user(arg, buf, sizeof(buf)) ? -EFAULT : 0;
	}
	if (copy_from_user(buf, arg, sizeof(buf)))
		return -EFAULT;
	mutex_lock(&cd->lock);
	err = fgft_char_set_label(cd, buf, sizeof(buf));
	mutex_unlock(&cd->lock);
	return err;
}

static long fgft_char_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	struct fgft_char_dev *cd = fgft_char_from_file(file);
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case FGFT_CHAR_GET_STATS:
		return fgft_char_get_stats(cd, argp);
	case FGFT_CHAR_RESET:
		return fgft_char_reset(cd);
	case FGFT_CHAR_GET_SIZE:
	case FGFT_CHAR_GET_LEVEL:
	case FGFT_CHAR_GET_MODE:
		return fgft_char_get_u32(cd, cmd, argp);
	case FGFT_CHAR_SET_SIZE:
	case FGFT_CHAR_SET_MODE:
		return fgft_char_set_u32(cd, cmd, argp);
	case FGFT_CHAR_GET_PATTERN:
	case FGFT_CHAR_SET_PATTERN:
		return fgft_char_pattern_ioctl(cd, cmd, argp);
	case FGFT_CHAR_GET_LABEL:
	case FGFT_CHAR_SET_LABEL:
		return fgft_char_label_ioctl(cd, cmd, argp);
	case FGFT_CHAR_SAVE:
		return fgft_char_checkpoint(cd);
	case FGFT_CHAR_RESTORE:
		return fgft_char_restore(cd);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations fgft_char_fops = {
	.owner		= THIS_MODULE,
	.open		= fgft_char_open,
	.release	= fgft_char_release,
	.read		= fgft_char_read,
	.write		= fgft_char_write,
	.llseek		= fgft_char_llseek,
	.unlocked_ioctl	= fgft_char_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

/* sysfs attributes of the misc device */

static ssize_t capacity_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);
	u32 size;

	spin_lock_bh(&cd->ring_lock);
	size = cd->size;
	spin_unlock_bh(&cd->ring_lock);
	return sysfs_emit(buf, "%u\n", size);
}

static ssize_t capacity_store(struct device *dev,
			      struct device_attribute *attr,
			      const char *buf, size_t count)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);
	u32 size;
	int err;

	err = kstrtou32(buf, 0, &size);
	if (err)
		return err;
	mutex_lock(&cd->lock);
	err = fgft_char_resize(cd, size);
	mutex_unlock(&cd->lock);
	return err ?: count;
}
static DEVICE_ATTR_RW(capacity);

static ssize_t level_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);
	u32 level;

	spin_lock_bh(&cd->ring_lock);
	level = fgft_char_level(cd);
	spin_unlock_bh(&cd->ring_lock);
	return sysfs_emit(buf, "%u\n", level);
}
static DEVICE_ATTR_RO(level);

static const char * const fgft_char_mode_names[] = {
	[FGFT_CHAR_MODE_BLOCK] = "block",
	[FGFT_CHAR_MODE_OVERWRITE] = "overwrite",
};

static ssize_t mode_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);

	return sysfs_emit(buf, "%s\n", fgft_char_mode_names[READ_ONCE(cd->mode)]);
}

static ssize_t mode_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);
	int mode, err;

	mode = sysfs_match_string(fgft_char_mode_names, buf);
	if (mode < 0)
		return mode;
	mutex_lock(&cd->lock);
	err = fgft_char_set_mode(cd, mode);
	mutex_unlock(&cd->lock);
	return err ?: count;
}
static DEVICE_ATTR_RW(mode);

static ssize_t label_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);
	ssize_t n;

	mutex_lock(&cd->lock);
	n = sysfs_emit(buf, "%s\n", cd->label);
	mutex_unlock(&cd->lock);
	return n;
}

static ssize_t label_store(struct device *dev, struct device_attribute *attr,
			   const char *buf, size_t count)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);
	int err;

	mutex_lock(&cd->lock);
	err = fgft_char_set_label(cd, buf, count);
	mutex_unlock(&cd->lock);
	return err ?: count;
}
static DEVICE_ATTR_RW(label);

static ssize_t stats_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);
	struct fgft_char_stats st;

	spin_lock_bh(&cd->ring_lock);
	st = cd->stats;
	spin_unlock_bh(&cd->ring_lock);
	return sysfs_emit(buf, "%llu %llu %llu %llu %llu %llu\n",
			  st.bytes_read, st.bytes_written, st.bytes_generated,
			  st.bytes_dropped, st.reads, st.writes);
}
static DEVICE_ATTR_RO(stats);

static ssize_t pattern_rate_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(cd->pattern.rate));
}

static ssize_t pattern_rate_store(struct device *dev,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);
	struct fgft_char_pattern p;
	u32 rate;
	int err;

	err = kstrtou32(buf, 0, &rate);
	if (err)
		return err;
	mutex_lock(&cd->lock);
	spin_lock_bh(&cd->ring_lock);
	p = cd->pattern;
	spin_unlock_bh(&cd->ring_lock);
	p.rate = rate;
	err = fgft_char_apply_pattern(cd, &p);
	mutex_unlock(&cd->lock);
	return err ?: count;
}
static DEVICE_ATTR_RW(pattern_rate);

static ssize_t pattern_interval_ms_show(struct device *dev,
					struct device_attribute *attr,
					char *buf)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(cd->pattern.interval_ms));
}

static ssize_t pattern_interval_ms_store(struct device *dev,
					 struct device_attribute *attr,
					 const char *buf, size_t count)
{
	struct fgft_char_dev *cd = fgft_char_from_dev(dev);
	struct fgft_char_pattern p;
	u32 ms;
	int err;

	err = kstrtou32(buf, 0, &ms);
	if (err)
		return err;
	if (!ms)
		return -EINVAL;
	mutex_lock(&cd->lock);
	spin_lock_bh(&cd->ring_lock);
	p = cd->pattern;
	spin_unlock_bh(&cd->ring_lock);
	p.interval_ms = ms;
	err = fgft_char_apply_pattern(cd, &p);
	mutex_unlock(&cd->lock);
	return err ?: count;
}
static DEVICE_ATTR_RW(pattern_interval_ms);

static struct attribute *fgft_char_attrs[] = {
	&dev_attr_capacity.attr,
	&dev_attr_level.attr,
	&dev_attr_mode.attr,
	&dev_attr_label.attr,
	&dev_attr_stats.attr,
	&dev_attr_pattern_rate.attr,
	&dev_attr_pattern_interval_ms.attr,
	NULL,
};
ATTRIBUTE_GROUPS(fgft_char);

static struct fgft_char_dev fgft_char_dev = {
	.misc = {
		.minor	= MISC_DYNAMIC_MINOR,
		.name	= DRV_NAME,
		.fops	= &fgft_char_fops,
		.groups	= fgft_char_groups,
		.mode	= 0600,
	},
	.mode = FGFT_CHAR_MODE_BLOCK,
	.pattern = { .interval_ms = 100 },
};

static int __init fgft_char_init(void)
{
	struct fgft_char_dev *cd = &fgft_char_dev;
	int err;

	if (ring_size < FGFT_CHAR_MIN_SIZE || ring_size > FGFT_CHAR_MAX_SIZE ||
	    !is_power_of_2(ring_size)) {
		pr_err(DRV_NAME ": ring_size %u is not a power of two in [%u, %u]\n",
		       ring_size, FGFT_CHAR_MIN_SIZE, FGFT_CHAR_MAX_SIZE);
		return -EINVAL;
	}
	mutex_init(&cd->lock);
	spin_lock_init(&cd->ring_lock);
	init_waitqueue_head(&cd->readq);
	init_waitqueue_head(&cd->writeq);
	timer_setup(&cd->gen_timer, fgft_char_generate, 0);
	cd->mode = overwrite ? FGFT_CHAR_MODE_OVERWRITE : FGFT_CHAR_MODE_BLOCK;
	if (fgft_char_set_label(cd, label, strlen(label)))
		strscpy(cd->label, DRV_NAME, sizeof(cd->label));

	cd->ring = kvzalloc(ring_size, GFP_KERNEL);
	cd->bounce = kzalloc(FGFT_CHAR_BOUNCE, GFP_KERNEL);
	if (!cd->ring || !cd->bounce) {
		err = -ENOMEM;
		goto err_free;
	}
	cd->size = ring_size;

	err = misc_register(&cd->misc);
	if (err)
		goto err_free;
	pr_info(DRV_NAME ": /dev/%s, %u byte ring\n", cd->misc.name, cd->size);
	return 0;

err_free:
	kfree(cd->bounce);
	kvfree(cd->ring);
	return err;
}

static void __exit fgft_char_exit(void)
{
	struct fgft_char_dev *cd = &fgft_char_dev;

	misc_deregister(&cd->misc);
	timer_shutdown_sync(&cd->gen_timer);
	kfree(cd->bounce);
	kvfree(cd->ring);
}

module_init(fgft_char_init);
module_exit(fgft_char_exit);

MODULE_DESCRIPTION("Byte FIFO character device (fgft corpus)");
MODULE_LICENSE("GPL");
