// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-snd: drive an ALSA card through its raw character devices
 * (/dev/snd/controlC<card>, /dev/snd/pcmC<card>D<dev>p) with the kernel's
 * ioctls only (no alsa-lib), one marker line per operation.
 *
 * usage: fgft-snd [-c CARD] [-d DEVICE] OP [ARG...]
 *
 *   list              every control:
 *                     FGFT-MARK snd op=list ret=0 errno=0 value=<count>
 *                     and one line per control:
 *                     FGFT-MARK snd-ctl numid=N iface=I index=I name=...
 *   info CTL          SNDRV_CTL_IOCTL_ELEM_INFO (the control's .info)
 *   get CTL           ELEM_INFO, then ELEM_READ (the control's .get)
 *   put CTL [V,V...]  ELEM_INFO and ELEM_READ, then ELEM_WRITE of the given
 *                     values, or of the current ones (the control's .put)
 *   play [MS]         MS milliseconds (default 250) of a square wave, S16_LE
 *                     stereo at 22050 Hz, to the PCM playback device, then
 *                     drain
 *   check [CTL]       the card works: CTL (default "Master Playback
 *                     Volume") is read, set to another value, read back,
 *                     restored and read back, then play 250 ms:
 *                     FGFT-MARK snd-check ok=<0|1> mixer=<0|1>
 *                     frames=<played> drain_ms=<t> controls=<count>
 *
 * CTL is a control name, optionally followed by "#INDEX" for controls that
 * share a name ("PCM Switch#1"). Markers for info, get, put and play are
 *
 *   FGFT-MARK snd op=<op> ret=<rc> errno=<n> value=<v> ctl=<name> ...
 *
 * with blanks in names written as '_'; value is "-" when the operation
 * failed, and step= names the ioctl that failed. Every operation gives up
 * after 10 s (a blocked ioctl is interrupted by SIGALRM).
 *
 * Exit status: 0 on success, 1 on failure, 2 on a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sound/asound.h>

#include "../../vm/guest/fgft-word.h"

#define RATE		22050
#define CHANNELS	2
#define PERIOD_FRAMES	1024
#define BUFFER_FRAMES	4096
#define TIME_LIMIT_S	10

struct ctx {
	int card;
	int device;
	int ctl_fd;
	int count;	/* controls on the card */
	struct snd_ctl_elem_id *ids;
};

struct result {
	int ret;
	int err;
	const char *step;
};

static void on_alarm(int sig)
{
	(void)sig;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


static int xioctl(int fd, unsigned long req, void *arg, struct result *r,
		  const char *step)
{
	int ret = ioctl(fd, req, arg);

	r->ret = ret;
	r->err = ret < 0 ? errno : 0;
	r->step = step;
	return ret;
}

static void mark(const char *op, const struct result *r, const char *value,
		 const char *ctl, const char *fmt, ...)
{
	char extra[256] = "", name[64];
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(extra, sizeof(extra), fmt, ap);
		va_end(ap);
	}
	word(name, sizeof(name), ctl ? ctl : "-");
	if (r->ret < 0)
		printf("FGFT-MARK snd op=%s ret=%d errno=%d value=- ctl=%s step=%s%s%s\n",
		       op, r->ret, r->err, name, r->step, fmt ? " " : "",
		       extra);
	else
		printf("FGFT-MARK snd op=%s ret=%d errno=0 value=%s ctl=%s%s%s\n",
		       op, r->ret, value, name, fmt ? " " : "", extra);
	fflush(stdout);
}

static int open_ctl(struct ctx *c, struct result *r)
{
	struct snd_ctl_elem_list list;
	char path[64];

	snprintf(path, sizeof(path), "/dev/snd/controlC%d", c->card);
	c->ctl_fd = open(path, O_RDWR | O_CLOEXEC);
	if (c->ctl_fd < 0) {
		r->ret = -1;
		r->err = errno;
		r->step = "open";
		return -1;
	}
	memset(&list, 0, sizeof(list));
	if (xioctl(c->ctl_fd, SNDRV_CTL_IOCTL_ELEM_LIST, &list, r, "list") < 0)
		return -1;
	c->ids = calloc(list.count ? list.count : 1, sizeof(*c->ids));
	if (!c->ids) {
		perror("calloc");
		exit(1);
	}
	list.space = list.count;
	list.pids = c->ids;
	if (xioctl(c->ctl_fd, SNDRV_CTL_IOCTL_ELEM_LIST, &list, r, "list") < 0)
		return -1;
	c->count = list.used;
	return 0;
}

/* The id of control "NAME" or "NAME#INDEX"; NULL (r set) if absent. */
static const struct snd_ctl_elem_id *find_ctl(struct ctx *c, const char *spec,
					      struct result *r)
{
	char name[SNDRV_CTL_ELEM_ID_NAME_MAXLEN];
	const char *hash = strrchr(spec, '#');
	unsigned int index = 0;
	size_t len = hash ? (size_t)(hash - spec) : strlen(spec);
	int i;

	if (len >= sizeof(name))
		len = sizeof(name) - 1;
	memcpy(name, spec, len);
	name[len] = '\0';
	if (hash)
		index = (unsigned int)strtoul(hash + 1, NULL, 10);
	for (i = 0; i < c->count; i++) {
		if (!strcmp((const char *)c->ids[i].name, name) &&
		    c->ids[i].index == index)
			return &c->ids[i];
	}
	r->ret = -1;
	r->err = ENOENT;
	r->step = "find";
	return NULL;
}

static int elem_info(struct ctx *c, const struct snd_ctl_elem_id *id,
		     struct snd_ctl_elem_info *info, struct result *r)
{
	memset(info, 0, sizeof(*info));
	info->id.numid = id->numid;
	return xioctl(c->ctl_fd, SNDRV_CTL_IOCTL_ELEM_INFO, info, r, "info");
}

static int elem_read(struct ctx *c, const struct snd_ctl_elem_id *id,
		     struct snd_ctl_elem_value *val, struct result *r)
{
	memset(val, 0, sizeof(*val));
	val->id.numid = id->numid;
	return xioctl(c->ctl_fd, SNDRV_CTL_IOCTL_ELEM_READ, val, r, "read");
}

static int elem_write(struct ctx *c, struct snd_ctl_elem_value *val,
		      struct result *r)
{
	return xioctl(c->ctl_fd, SNDRV_CTL_IOCTL_ELEM_WRITE, val, r, "write");
}

static int is_integer(const struct snd_ctl_elem_info *info)
{
	return info->type == SNDRV_CTL_ELEM_TYPE_BOOLEAN ||
	       info->type == SNDRV_CTL_ELEM_TYPE_INTEGER;
}

/* The values of a boolean, integer or enumerated control as "a,b,...". */
static void format_values(char *out, size_t len,
			  const struct snd_ctl_elem_info *info,
			  const struct snd_ctl_elem_value *val)
{
	size_t at = 0;
	unsigned int i;

	out[0] = '\0';
	for (i = 0; i < info->count && i < 8 && at + 24 < len; i++) {
		long v;

		if (is_integer(info))
			v = val->value.integer.value[i];
		else if (info->type == SNDRV_CTL_ELEM_TYPE_ENUMERATED)
			v = val->value.enumerated.item[i];
		else
			v = val->value.bytes.data[i];
		at += snprintf(out + at, len - at, "%s%ld", i ? "," : "", v);
	}
	if (!at)
		snprintf(out, len, "-");
}

static void set_value(const struct snd_ctl_elem_info *info,
		      struct snd_ctl_elem_value *val, unsigned int i, long v)
{
	if (is_integer(info))
		val->value.integer.value[i] = v;
	else if (info->type == SNDRV_CTL_ELEM_TYPE_ENUMERATED)
		val->value.enumerated.item[i] = (unsigned int)v;
}

static int op_info(struct ctx *c, const char *spec)
{
	const struct snd_ctl_elem_id *id;
	struct snd_ctl_elem_info info;
	struct result r;
	char v[16];

	id = find_ctl(c, spec, &r);
	if (!id || elem_info(c, id, &info, &r) < 0) {
		mark("info", &r, "-", spec, NULL);
		return 1;
	}
	snprintf(v, sizeof(v), "%d", info.type);
	mark("info", &r, v, spec, "count=%u min=%ld max=%ld", info.count,
	     is_integer(&info) ? info.value.integer.min : 0L,
	     is_integer(&info) ? info.value.integer.max : 0L);
	return 0;
}

static int op_get(struct ctx *c, const char *spec)
{
	const struct snd_ctl_elem_id *id;
	struct snd_ctl_elem_info info;
	struct snd_ctl_elem_value val;
	struct result r;
	char v[200];

	id = find_ctl(c, spec, &r);
	if (!id || elem_info(c, id, &info, &r) < 0 ||
	    elem_read(c, id, &val, &r) < 0) {
		mark("get", &r, "-", spec, NULL);
		return 1;
	}
	format_values(v, sizeof(v), &info, &val);
	mark("get", &r, v, spec, NULL);
	return 0;
}

static int op_put(struct ctx *c, const char *spec, const char *values)
{
	const struct snd_ctl_elem_id *id;
	struct snd_ctl_elem_info info;
	struct snd_ctl_elem_value val;
	struct result r;
	unsigned int i = 0;
	char v[200];

	id = find_ctl(c, spec, &r);
	if (!id || elem_info(c, id, &info, &r) < 0 ||
	    elem_read(c, id, &val, &r) < 0) {
		mark("put", &r, "-", spec, NULL);
		return 1;
	}
	while (values && *values && i < info.count) {
		char *end;
		long x = strtol(values, &end, 0);

		if (end == values)
			break;
		set_value(&info, &val, i++, x);
		values = *end == ',' ? end + 1 : end;
	}
	elem_write(c, &val, &r);
	format_values(v, sizeof(v), &info, &val);
	mark("put", &r, v, spec, NULL);
	return r.ret < 0;
}

/* The mixer round trip of "check": 1 if the control kept what was put. */
static int mixer_roundtrip(struct ctx *c, const char *spec)
{
	const struct snd_ctl_elem_id *id;
	struct snd_ctl_elem_info info;
	struct snd_ctl_elem_value orig, val, back;
	struct result r;
	long v;

	id = find_ctl(c, spec, &r);
	if (!id || elem_info(c, id, &info, &r) < 0 || !is_integer(&info) ||
	    info.value.integer.max <= info.value.integer.min ||
	    elem_read(c, id, &orig, &r) < 0)
		return 0;
	val = orig;
	v = orig.value.integer.value[0];
	v = v < info.value.integer.max ? v + 1 : v - 1;
	val.value.integer.value[0] = v;
	if (elem_write(c, &val, &r) < 0 || elem_read(c, id, &back, &r) < 0 ||
	    back.value.integer.value[0] != v)
		return 0;
	if (elem_write(c, &orig, &r) < 0 || elem_read(c, id, &back, &r) < 0 ||
	    back.value.integer.value[0] != orig.value.integer.value[0])
		return 0;
	return 1;
}

static struct snd_mask *param_mask(struct snd_pcm_hw_params *p, int n)
{
	return &p->masks[n - SNDRV_PCM_HW_PARAM_FIRST_MASK];
}

static struct snd_interval *param_interval(struct snd_pcm_hw_params *p, int n)
{
	return &p->intervals[n - SNDRV_PCM_HW_PARAM_FIRST_INTERVAL];
}

static void mask_only(struct snd_pcm_hw_params *p, int n, unsigned int bit)
{
	struct snd_mask *m = param_mask(p, n);

	memset(m, 0, sizeof(*m));
	m->bits[bit / 32] = 1U << (bit % 32);
}

static void interval_only(struct snd_pcm_hw_params *p, int n, unsigned int v)
{
	struct snd_interval *i = param_interval(p, n);

	i->min = v;
	i->max = v;
	i->integer = 1;
}

static void hw_params_any(struct snd_pcm_hw_params *p)
{
	int n;

	memset(p, 0, sizeof(*p));
	for (n = SNDRV_PCM_HW_PARAM_FIRST_MASK;
	     n <= SNDRV_PCM_HW_PARAM_LAST_MASK; n++)
		memset(param_mask(p, n), 0xff, sizeof(struct snd_mask));
	for (n = SNDRV_PCM_HW_PARAM_FIRST_INTERVAL;
	     n <= SNDRV_PCM_HW_PARAM_LAST_INTERVAL; n++) {
		param_interval(p, n)->min = 0;
		param_interval(p, n)->max = ~0U;
	}
	p->rmask = ~0U;
}

/*
 * Plays ms milliseconds and drains. Returns the frames played (-1 on
 * failure, r says where) and the drain time in *drain_ms.
 */
static long play(struct ctx *c, unsigned int ms, struct result *r,
		 long long *drain_ms)
{
	struct snd_pcm_hw_params hw;
	struct snd_xferi x;
	long total = (long)RATE * ms / 1000, done = 0;
	int16_t *buf;
	char path[64];
	long long t0;
	long i;
	int fd;

	snprintf(path, sizeof(path), "/dev/snd/pcmC%dD%dp", c->card,
		 c->device);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		r->ret = -1;
		r->err = errno;
		r->step = "open";
		return -1;
	}
	hw_params_any(&hw);
	mask_only(&hw, SNDRV_PCM_HW_PARAM_ACCESS,
		  SNDRV_PCM_ACCESS_RW_INTERLEAVED);
	mask_only(&hw, SNDRV_PCM_HW_PARAM_FORMAT, SNDRV_PCM_FORMAT_S16_LE);
	mask_only(&hw, SNDRV_PCM_HW_PARAM_SUBFORMAT, SNDRV_PCM_SUBFORMAT_STD);
	interval_only(&hw, SNDRV_PCM_HW_PARAM_CHANNELS, CHANNELS);
	interval_only(&hw, SNDRV_PCM_HW_PARAM_RATE, RATE);
	interval_only(&hw, SNDRV_PCM_HW_PARAM_PERIOD_SIZE, PERIOD_FRAMES);
	interval_only(&hw, SNDRV_PCM_HW_PARAM_BUFFER_SIZE, BUFFER_FRAMES);
	if (xioctl(fd, SNDRV_PCM_IOCTL_HW_PARAMS, &hw, r, "hw-params") < 0 ||
	    xioctl(fd, SNDRV_PCM_IOCTL_PREPARE, NULL, r, "prepare") < 0) {
		close(fd);
		return -1;
	}
	buf = calloc((size_t)total * CHANNELS, sizeof(*buf));
	if (!buf) {
		perror("calloc");
		exit(1);
	}
	/* About 440 Hz: the sign flips every 25 frames. */
	for (i = 0; i < total * CHANNELS; i++)
		buf[i] = ((i / CHANNELS / 25) & 1) ? 8000 : -8000;
	while (done < total) {
		memset(&x, 0, sizeof(x));
		x.buf = buf + done * CHANNELS;
		x.frames = total - done;
		if (xioctl(fd, SNDRV_PCM_IOCTL_WRITEI_FRAMES, &x, r,
			   "write") < 0)
			break;
		done += x.result;
	}
	t0 = now_ms();
	if (done == total)
		xioctl(fd, SNDRV_PCM_IOCTL_DRAIN, NULL, r, "drain");
	*drain_ms = now_ms() - t0;
	free(buf);
	close(fd);
	return r->ret < 0 ? -1 : done;
}

static int op_play(struct ctx *c, const char *arg)
{
	unsigned int ms = arg ? (unsigned int)strtoul(arg, NULL, 0) : 250;
	long long drain_ms = 0;
	struct result r;
	long frames;
	char v[32];

	frames = play(c, ms, &r, &drain_ms);
	snprintf(v, sizeof(v), "%ld", frames);
	mark("play", &r, v, NULL, "drain_ms=%lld rate=%d", drain_ms, RATE);
	return frames < 0;
}

static int op_check(struct ctx *c, const char *spec)
{
	long long drain_ms = 0;
	struct result r;
	long frames;
	int mixer;

	mixer = mixer_roundtrip(c, spec ? spec : "Master Playback Volume");
	frames = play(c, 250, &r, &drain_ms);
	printf("FGFT-MARK snd-check ok=%d mixer=%d frames=%ld drain_ms=%lld controls=%d\n",
	       mixer && frames > 0, mixer, frames < 0 ? 0 : frames, drain_ms,
	       c->count);
	fflush(stdout);
	return !(mixer && frames > 0);
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: fgft-snd [-c CARD] [-d DEVICE] OP [ARG...]\n"
		"  ops: list | info CTL | get CTL | put CTL [V,V...] |\n"
		"       play [MS] | check [CTL]\n");
}

int main(int argc, char **argv)
{
	struct ctx c = { .ctl_fd = -1 };
	struct sigaction sa;
	struct result r;
	const char *op, *arg;
	int opt, i;

	while ((opt = getopt(argc, argv, "c:d:")) != -1) {
		if (opt == 'c') {
			c.card = atoi(optarg);
		} else if (opt == 'd') {
			c.device = atoi(optarg);
		} else {
			print_usage();
			return 2;
		}
	}
	if (optind >= argc) {
		print_usage();
		return 2;
	}
	op = argv[optind];
	arg = optind + 1 < argc ? argv[optind + 1] : NULL;
	if ((!strcmp(op, "info") || !strcmp(op, "get") ||
	     !strcmp(op, "put")) && !arg) {
		print_usage();
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarm(TIME_LIMIT_S);
	if (open_ctl(&c, &r) < 0) {
		mark(op, &r, "-", arg, NULL);
		if (!strcmp(op, "check"))
			printf("FGFT-MARK snd-check ok=0 mixer=0 frames=0 drain_ms=0 controls=0\n");
		return 1;
	}
	if (!strcmp(op, "list")) {
		char name[64], v[16];

		r.ret = 0;
		snprintf(v, sizeof(v), "%d", c.count);
		mark("list", &r, v, NULL, NULL);
		for (i = 0; i < c.count; i++)
			printf("FGFT-MARK snd-ctl numid=%u iface=%d index=%u name=%s\n",
			       c.ids[i].numid, c.ids[i].iface, c.ids[i].index,
			       word(name, sizeof(name),
				    (const char *)c.ids[i].name));
		return 0;
	}
	if (!strcmp(op, "info"))
		return op_info(&c, arg);
	if (!strcmp(op, "get"))
		return op_get(&c, arg);
	if (!strcmp(op, "put"))
		return op_put(&c, arg,
			      optind + 2 < argc ? argv[optind + 2] : NULL);
	if (!strcmp(op, "play"))
		return op_play(&c, arg);
	if (!strcmp(op, "check"))
		return op_check(&c, arg);
	print_usage();
	return 2;
}
