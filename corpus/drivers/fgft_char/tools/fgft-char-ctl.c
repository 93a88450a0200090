// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-char-ctl: drive the fgft_char device from user space, one line per
 * operation:
 *
 *   FGFT-MARK charctl op=<op> ret=<rc> errno=<n> value=<v>
 *
 * usage: fgft-char-ctl DEVICE OP...
 *
 * OPs: stats reset size size=N level mode mode=N pattern
 * pattern=RATE,MS,SEED label label=TEXT save restore seek=N (SEEK_CUR)
 * write=TEXT read=N (non-blocking).
 *
 * Exit status: 0 if every operation succeeded, 1 if one failed, 2 on a
 * usage error.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "../fgft_char.h"

static int failed;

static void report(const char *op, long ret, const char *fmt, ...)
{
	int err = ret < 0 ? errno : 0;
	va_list ap;

	printf("FGFT-MARK charctl op=%s ret=%ld errno=%d value=", op, ret, err);
	if (ret < 0) {
		printf("-");
		failed = 1;
	} else {
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	printf("\n");
}

static int run(int fd, const char *arg)
{
	char op[64], *val;
	__u32 u;
	long r;

	snprintf(op, sizeof(op), "%s", arg);
	val = strchr(op, '=');
	if (val)
		*val++ = '\0';

	if (!strcmp(op, "stats")) {
		struct fgft_char_stats st;

		r = ioctl(fd, FGFT_CHAR_GET_STATS, &st);
		report(op, r, "read:%llu,written:%llu,generated:%llu,dropped:%llu",
		       (unsigned long long)st.bytes_read,
		       (unsigned long long)st.bytes_written,
		       (unsigned long long)st.bytes_generated,
		       (unsigned long long)st.bytes_dropped);
	} else if (!strcmp(op, "reset")) {
		report(op, ioctl(fd, FGFT_CHAR_RESET), "0");
	} else if (!strcmp(op, "size") || !strcmp(op, "mode")) {
		int is_size = op[0] == 's';

		if (val) {
			u = strtoul(val, NULL, 0);
			r = ioctl(fd, is_size ? FGFT_CHAR_SET_SIZE :
				  FGFT_CHAR_SET_MODE, &u);
		} else {
			r = ioctl(fd, is_size ? FGFT_CHAR_GET_SIZE :
				  FGFT_CHAR_GET_MODE, &u);
		}
		report(op, r, "%u", u);
	} else if (!strcmp(op, "level")) {
		r = ioctl(fd, FGFT_CHAR_GET_LEVEL, &u);
		report(op, r, "%u", u);
	} else if (!strcmp(op, "pattern")) {
		struct fgft_char_pattern p;

		memset(&p, 0, sizeof(p));
		if (val) {
			unsigned int rate = 0, ms = 0, seed = 0;

			if (sscanf(val, "%u,%u,%u", &rate, &ms, &seed) < 2)
				return 2;
			p.rate = rate;
			p.interval_ms = ms;
			p.seed = seed;
			r = ioctl(fd, FGFT_CHAR_SET_PATTERN, &p);
		} else {
			r = ioctl(fd, FGFT_CHAR_GET_PATTERN, &p);
		}
		report(op, r, "%u,%u,%u", p.rate, p.interval_ms, p.seed);
	} else if (!strcmp(op, "label")) {
		char buf[FGFT_CHAR_LABEL_LEN];

		memset(buf, 0, sizeof(buf));
		if (val) {
			snprintf(buf, sizeof(buf), "%s", val);
			r = ioctl(fd, FGFT_CHAR_SET_LABEL, buf);
		} else {
			r = ioctl(fd, FGFT_CHAR_GET_LABEL, buf);
		}
		buf[sizeof(buf) - 1] = '\0';
		report(op, r, "%s", buf);
	} else if (!strcmp(op, "save")) {
		report(op, ioctl(fd, FGFT_CHAR_SAVE), "0");
	} else if (!strcmp(op, "restore")) {
		report(op, ioctl(fd, FGFT_CHAR_RESTORE), "0");
	} else if (!strcmp(op, "seek") && val) {
		off_t o = lseek(fd, strtol(val, NULL, 0), SEEK_CUR);

		report(op, o, "%lld", (long long)o);
	} else if (!strcmp(op, "write") && val) {
		report(op, write(fd, val, strlen(val)), "%zu", strlen(val));
	} else if (!strcmp(op, "read") && val) {
		char buf[4096];
		size_t n = strtoul(val, NULL, 0);
		ssize_t got;

		if (n > sizeof(buf) - 1)
			n = sizeof(buf) - 1;
		got = read(fd, buf, n);
		buf[got > 0 ? got : 0] = '\0';
		report(op, got, "%zd", got);
	} else {
		fprintf(stderr, "fgft-char-ctl: unknown operation %s\n", arg);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int fd, i;

	if (argc < 3) {
		fprintf(stderr, "usage: fgft-char-ctl DEVICE OP...\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_NONBLOCK);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	for (i = 2; i < argc; i++)
		if (run(fd, argv[i]) == 2)
			return 2;
	close(fd);
	return failed;
}
