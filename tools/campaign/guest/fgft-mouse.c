// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-mouse: drive the psmouse driver through the sysfs attributes of the
 * serio port it is bound to (/sys/bus/serio/devices/serioN/: protocol, rate,
 * resolution, resetafter, resync_time), one marker line per operation.
 *
 * usage: fgft-mouse [-p serioN] OP [ARG...]
 *
 *   show ATTR          read the attribute (psmouse's .show)
 *   set ATTR [VALUE]   write VALUE, or the value just read, with no
 *                      trailing newline (psmouse's .set)
 *   check              the mouse answers: switch the protocol to bare
 *                      "PS/2", then to "ImExPS/2" (the driver detects it
 *                      with the IntelliMouse Explorer knock sequence and
 *                      GETID: only a device that answers passes), then
 *                      back to the protocol found first:
 *                      FGFT-MARK mouse-check ok=<0|1> port=<p> protocol=<p0>
 *                      probed=<protocol after the switch> inputs=<n>
 *
 * The port is the first serio port bound to psmouse with its attributes in
 * place, waited for up to 3 s, unless -p names one. Markers for show and set are
 *
 *   FGFT-MARK mouse op=<op> attr=<a> ret=<rc> errno=<n> value=<v> port=<p>
 *
 * with ret the read or write result and value "-" on failure. Every run
 * gives up after 10 s (a blocked read or write is interrupted by SIGALRM).
 *
 * Exit status: 0 on success, 1 on failure, 2 on a usage error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../vm/guest/fgft-word.h"

#define SERIO_DEVICES	"/sys/bus/serio/devices"
#define PSMOUSE_DRIVER	"/sys/bus/serio/drivers/psmouse"
#define TIME_LIMIT_S	10

struct result {
	int ret;
	int err;
};

static void on_alarm(int sig)
{
	(void)sig;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * The first serio port bound to psmouse whose attributes are there, waiting
 * up to 3 s: the driver link appears when probing starts, the attributes
 * when psmouse_connect() has finished.
 */
static int find_port(char *port, size_t len)
{
	char path[512];
	int tries;

	for (tries = 0; tries < 30; tries++) {
		DIR *d = opendir(PSMOUSE_DRIVER);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			if (strncmp(e->d_name, "serio", 5))
				continue;
			snprintf(path, sizeof(path), SERIO_DEVICES "/%s/protocol",
				 e->d_name);
			if (!access(path, R_OK)) {
				snprintf(port, len, "%s", e->d_name);
				closedir(d);
				return 0;
			}
		}
		if (d)
			closedir(d);
		sleep_ms(100);
	}
	return -1;
}

/* Reads attribute attr of port into buf without the trailing newline. */
static int attr_read(const char *port, const char *attr, char *buf,
		     size_t len, struct result *r)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), SERIO_DEVICES "/%s/%s", port, attr);
	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r->ret = -1;
		r->err = errno;
		return -1;
	}
	n = read(fd, buf, len - 1);
	r->ret = (int)n;
	r->err = n < 0 ? errno : 0;
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

static int attr_write(const char *port, const char *attr, const char *val,
		      struct result *r)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), SERIO_DEVICES "/%s/%s", port, attr);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		r->ret = -1;
		r->err = errno;
		return -1;
	}
	n = write(fd, val, strlen(val));
	r->ret = (int)n;
	r->err = n < 0 ? errno : 0;
	close(fd);
	return n < 0 ? -1 : 0;
}


static void mark(const char *op, const char *attr, const struct result *r,
		 const char *value, const char *port)
{
	char v[128];

	printf("FGFT-MARK mouse op=%s attr=%s ret=%d errno=%d value=%s port=%s\n",
	       op, attr, r->ret, r->err,
	       r->ret < 0 ? "-" : word(v, sizeof(v), value), port);
	fflush(stdout);
}

/* Input devices registered on the port (serioN/input/inputM). */
static int count_inputs(const char *port)
{
	char path[256];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), SERIO_DEVICES "/%s/input", port);
	d = opendir(path);
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, "input", 5);
	if (d)
		closedir(d);
	return n;
}

static int op_check(const char *port)
{
	char p0[64], probed[64] = "-", now[64] = "-", w[2][64];
	struct result r;
	int ok = 0;

	if (attr_read(port, "protocol", p0, sizeof(p0), &r) < 0) {
		snprintf(p0, sizeof(p0), "-");
	} else if (attr_write(port, "protocol", "bare", &r) == 0 &&
		   attr_read(port, "protocol", now, sizeof(now), &r) == 0 &&
		   !strcmp(now, "PS/2") &&
		   attr_write(port, "protocol", "exps", &r) == 0 &&
		   attr_read(port, "protocol", probed, sizeof(probed),
			     &r) == 0 &&
		   !strcmp(probed, "ImExPS/2") &&
		   attr_write(port, "protocol", p0, &r) == 0 &&
		   attr_read(port, "protocol", now, sizeof(now), &r) == 0 &&
		   !strcmp(now, p0)) {
		ok = count_inputs(port) > 0;
	}
	printf("FGFT-MARK mouse-check ok=%d port=%s protocol=%s probed=%s inputs=%d\n",
	       ok, port, word(w[0], sizeof(w[0]), p0),
	       word(w[1], sizeof(w[1]), probed), count_inputs(port));
	fflush(stdout);
	return !ok;
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: fgft-mouse [-p serioN] OP [ARG...]\n"
		"  ops: show ATTR | set ATTR [VALUE] | check\n");
}

int main(int argc, char **argv)
{
	char port[256] = "", val[128];
	const char *op, *attr;
	struct sigaction sa;
	struct result r;
	int opt;

	while ((opt = getopt(argc, argv, "p:")) != -1) {
		if (opt != 'p') {
			print_usage();
			return 2;
		}
		snprintf(port, sizeof(port), "%s", optarg);
	}
	if (optind >= argc) {
		print_usage();
		return 2;
	}
	op = argv[optind];
	attr = optind + 1 < argc ? argv[optind + 1] : NULL;
	if (strcmp(op, "check") && (!attr || strchr(attr, '/'))) {
		print_usage();
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarm(TIME_LIMIT_S);
	if (!port[0] && find_port(port, sizeof(port)) < 0) {
		fprintf(stderr, "fgft-mouse: no serio port bound to psmouse\n");
		if (!strcmp(op, "check"))
			printf("FGFT-MARK mouse-check ok=0 port=- protocol=- probed=- inputs=0\n");
		return 1;
	}
	if (!strcmp(op, "check"))
		return op_check(port);
	if (!strcmp(op, "show")) {
		attr_read(port, attr, val, sizeof(val), &r);
		mark(op, attr, &r, val, port);
		return r.ret < 0;
	}
	if (!strcmp(op, "set")) {
		if (optind + 2 < argc) {
			snprintf(val, sizeof(val), "%s", argv[optind + 2]);
		} else if (attr_read(port, attr, val, sizeof(val), &r) < 0) {
			mark(op, attr, &r, val, port);
			return 1;
		}
		attr_write(port, attr, val, &r);
		mark(op, attr, &r, val, port);
		return r.ret < 0;
	}
	print_usage();
	return 2;
}
