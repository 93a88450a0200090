/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * fgft_char: user interface of the fgft corpus character device.
 *
 * /dev/fgft_char is a byte FIFO: write() appends, read() consumes. An
 * optional generator fills it from a timer with a counting byte pattern.
 * When the FIFO is full, block mode makes writers wait (the generator drops
 * its bytes); overwrite mode discards the oldest bytes instead.
 */
#ifndef _UAPI_FGFT_CHAR_H
#define _UAPI_FGFT_CHAR_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define FGFT_CHAR_LABEL_LEN	32
#define FGFT_CHAR_MIN_SIZE	64
#define FGFT_CHAR_MAX_SIZE	(1U << 20)

enum fgft_char_mode {
	FGFT_CHAR_MODE_BLOCK = 0,
	FGFT_CHAR_MODE_OVERWRITE = 1,
};

struct fgft_char_stats {
	__u64 bytes_read;
	__u64 bytes_written;
	__u64 bytes_generated;
	__u64 bytes_dropped;	/* overwritten, or lost by the generator */
	__u64 reads;
	__u64 writes;
};

struct fgft_char_pattern {
	__u32 rate;		/* bytes per tick, 0: generator off */
	__u32 interval_ms;	/* tick period, at least 1 */
	__u8 seed;		/* next byte; each byte is the previous one + 1 */
	__u8 pad[7];
};

#define FGFT_CHAR_IOC_MAGIC	'f'
#define FGFT_CHAR_GET_STATS	_IOR(FGFT_CHAR_IOC_MAGIC, 1, struct fgft_char_stats)
#define FGFT_CHAR_RESET		_IO(FGFT_CHAR_IOC_MAGIC, 2)
#define FGFT_CHAR_GET_SIZE	_IOR(FGFT_CHAR_IOC_MAGIC, 3, __u32)
#define FGFT_CHAR_SET_SIZE	_IOW(FGFT_CHAR_IOC_MAGIC, 4, __u32)
#define FGFT_CHAR_GET_LEVEL	_IOR(FGFT_CHAR_IOC_MAGIC, 5, __u32)
#define FGFT_CHAR_GET_MODE	_IOR(FGFT_CHAR_IOC_MAGIC, 6, __u32)
#define FGFT_CHAR_SET_MODE	_IOW(FGFT_CHAR_IOC_MAGIC, 7, __u32)
#define FGFT_CHAR_GET_PATTERN	_IOR(FGFT_CHAR_IOC_MAGIC, 8, struct fgft_char_pattern)
#define FGFT_CHAR_SET_PATTERN	_IOW(FGFT_CHAR_IOC_MAGIC, 9, struct fgft_char_pattern)
#define FGFT_CHAR_GET_LABEL	_IOR(FGFT_CHAR_IOC_MAGIC, 10, char[FGFT_CHAR_LABEL_LEN])
#define FGFT_CHAR_SET_LABEL	_IOW(FGFT_CHAR_IOC_MAGIC, 11, char[FGFT_CHAR_LABEL_LEN])
/* Save the configuration (size, mode, label, pattern); restore it. */
#define FGFT_CHAR_SAVE		_IO(FGFT_CHAR_IOC_MAGIC, 12)
#define FGFT_CHAR_RESTORE	_IO(FGFT_CHAR_IOC_MAGIC, 13)

#endif /* _UAPI_FGFT_CHAR_H */
