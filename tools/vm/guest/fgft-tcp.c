// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-tcp: one TCP stream from interface A to interface B, both in this
 * guest and on one QEMU hub, as netperf's TCP_STREAM measures a NIC: the
 * stack segments (or the NIC does, with TSO) and acknowledges, so the
 * driver sees full-size frames both ways and transmit calls that carry
 * many of them.
 *
 *   fgft-tcp [-d SECONDS] [-W WARM_SECONDS] [-m WRITE_BYTES]
 *            [-w LINK_WAIT_MS] IFACE_A IFACE_B
 *
 * B is moved into a network namespace of its own (a child process's), so
 * that the stream leaves through A and arrives through B instead of being
 * delivered locally. A is 10.211.0.1/24, B 10.211.0.2/24. The child
 * listens and counts the bytes it reads in memory shared with the parent;
 * the parent connects and writes WRITE_BYTES (default 65536) at a time.
 * After WARM_SECONDS (default 1) of writing, the bytes the receiver got
 * during the next SECONDS (default 5) are the measurement:
 *
 *   FGFT-MARK tcp bytes=N secs=S mbps=M tx_frames=F rx_frames=R
 *       frame_bytes=B retrans=T rtt_us=U connect_ms=C warm=W
 *
 * tx_frames and rx_frames are A's tx_packets and B's rx_packets during the
 * measurement (A's from /sys here, B's from /proc/net/dev in the child's
 * namespace), frame_bytes the bytes received per frame; retrans and rtt_us
 * are the sender's TCP_INFO at the end (segments retransmitted over the
 * connection's life, smoothed round-trip time). At the end the child
 * moves B back into this namespace (its addresses are gone then) and
 * exits, and B is brought up again, as it was.
 *
 * Both interfaces are brought up first, and the tool waits up to
 * LINK_WAIT_MS (default 5000) for both links (operstate "up" or "unknown",
 * as fgft-pkt does) and then for the connection.
 *
 * No step waits for good: a write that moves nothing for 5 s ends the run
 * (a dead link), and so does a receiver that does not finish 5 s after the
 * stream ends (it is killed, and its namespace's end gives B back).
 *
 * Exit status: 0 if bytes arrived during the measurement, 1 if none did or
 * on a set-up error, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "fgft-link.h"

#define PORT		5001
#define ADDR_A		"10.211.0.1"
#define ADDR_B		"10.211.0.2"
#define NETMASK		"255.255.255.0"

/*
 * What the receiving child shares with the parent, each field read and
 * written with the compiler's atomic built-ins (get()/put()).
 */
struct shared {
	unsigned long long bytes;	/* read so far */
	unsigned long long rx_frames;	/* B's rx_packets, sampled */
	int sample;			/* parent asks for rx_frames */
};

#define get(field)	__atomic_load_n(&(field), __ATOMIC_ACQUIRE)
#define put(field, v)	__atomic_store_n(&(field), (v), __ATOMIC_RELEASE)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int set_addr(int fd, const char *name, const char *addr)
{
	struct sockaddr_in *sin;
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	sin = (struct sockaddr_in *)&ifr.ifr_addr;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin->sin_addr);
	if (ioctl(fd, SIOCSIFADDR, &ifr) < 0)
		return -1;
	inet_pton(AF_INET, NETMASK, &sin->sin_addr);
	return ioctl(fd, SIOCSIFNETMASK, &ifr);
}

/* Carrier on (IFF_RUNNING), asked in the caller's namespace. */
static int running(int fd, const char *name)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	return ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
	       (ifr.ifr_flags & IFF_RUNNING);
}

/*
 * An interface's counter from /sys/class/net/NAME/statistics/WHAT. sysfs
 * shows the namespace of whoever mounted it (this one), so the child reads
 * B's from its own /proc/net/dev instead (rx_frames_now()).
 */
static unsigned long long stat_of(const char *name, const char *what)
{
	unsigned long long v = 0;
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s", name,
		 what);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* rx_packets of NAME in the caller's namespace, from /proc/net/dev. */
static unsigned long long rx_frames_now(const char *name)
{
	unsigned long long bytes = 0, packets = 0;
	char line[512];
	size_t len = strlen(name);
	FILE *f = fopen("/proc/net/dev", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		while (*p == ' ')
			p++;
		if (!strncmp(p, name, len) && p[len] == ':') {
			if (sscanf(p + len + 1, "%llu %llu", &bytes,
				   &packets) != 2)
				packets = 0;
			break;
		}
	}
	fclose(f);
	return packets;
}

/* Moves interface IFINDEX into the network namespace of process PID. */
static int move_to_ns(int ifindex, pid_t pid)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		struct rtattr rta;
		uint32_t pid;
	} req;
	struct {
		struct nlmsghdr nh;
		struct nlmsgerr err;
	} ack;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd, ret = -1;
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -1;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = RTM_NEWLINK;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req.nh.nlmsg_seq = 1;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = ifindex;
	req.rta.rta_type = IFLA_NET_NS_PID;
	req.rta.rta_len = RTA_LENGTH(sizeof(uint32_t));
	req.pid = (uint32_t)pid;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa,
		   sizeof(sa)) != (ssize_t)sizeof(req))
		goto out;
	n = recv(fd, &ack, sizeof(ack), 0);
	if (n >= (ssize_t)sizeof(ack) && ack.nh.nlmsg_type == NLMSG_ERROR) {
		ret = ack.err.error ? -1 : 0;
		if (ack.err.error)
			errno = -ack.err.error;
	}
out:
	close(fd);
	return ret;
}

static int wait_byte(int fd, char want)
{
	char c;

	return read(fd, &c, 1) == 1 && c == want ? 0 : -1;
}

/*
 * The receiver, in a namespace of its own: takes B over from the parent,
 * reads the stream, then gives B back.
 */
static int receiver(const char *ifb, int to_parent, int from_parent,
		    struct shared *sh, long wait_ms)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(PORT) };
	struct timeval tick = { 0, 20000 }, accept_to = { 0, 0 };
	static char buf[1 << 16];
	int fd, ls, cs, one = 1, ifindex;
	double t0;
	ssize_t n;

	if (unshare(CLONE_NEWNET) < 0) {
		perror("fgft-tcp: unshare(CLONE_NEWNET)");
		return 1;
	}
	if (write(to_parent, "n", 1) != 1 || wait_byte(from_parent, 'm'))
		return 1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || iface_up(fd, "lo") || set_addr(fd, ifb, ADDR_B) ||
	    iface_up(fd, ifb)) {
		fprintf(stderr, "fgft-tcp: set up %s in its namespace: %s\n",
			ifb, strerror(errno));
		return 1;
	}
	t0 = now_s();
	while (!running(fd, ifb) && now_s() - t0 < wait_ms / 1000.0)
		sleep_ms(10);
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, ADDR_B, &sin.sin_addr);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(ls, 1)) {
		perror("fgft-tcp: listen");
		return 1;
	}
	if (write(to_parent, "l", 1) != 1)
		return 1;
	/* The parent gives up connecting after wait_ms + 10 s: so does accept. */
	accept_to.tv_sec = wait_ms / 1000 + 15;
	setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &accept_to, sizeof(accept_to));
	cs = accept(ls, NULL, NULL);
	if (cs < 0) {
		perror("fgft-tcp: accept");
		return 1;
	}
	/* Wake up now and then to answer a sample while no data comes. */
	setsockopt(cs, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof(tick));
	for (;;) {
		n = read(cs, buf, sizeof(buf));
		if (n > 0)
			put(sh->bytes, get(sh->bytes) + (unsigned long long)n);
		else if (n == 0 || (errno != EAGAIN && errno != EINTR) ||
			 getppid() == 1)
			break;
		if (get(sh->sample)) {
			put(sh->rx_frames, rx_frames_now(ifb));
			put(sh->sample, 0);
		}
	}
	close(cs);
	close(ls);
	ifindex = (int)if_nametoindex(ifb);
	if (!ifindex || move_to_ns(ifindex, getppid())) {
		fprintf(stderr, "fgft-tcp: move %s back: %s\n", ifb,
			strerror(errno));
		return 1;
	}
	return 0;
}

/*
 * Writes MSG bytes at a time until END (CLOCK_MONOTONIC seconds). Each
 * write gives up after the socket's send time-out, so a stream that stops
 * moving (no acknowledgement comes back) ends in 5 s: -1 then.
 */
static int send_until(int s, const char *buf, long msg, double end)
{
	double moved = now_s();

	while (now_s() < end) {
		if (write(s, buf, msg) > 0) {
			moved = now_s();
			continue;
		}
		if ((errno != EAGAIN && errno != EINTR) || now_s() - moved > 5) {
			if (errno == EAGAIN)
				errno = ETIMEDOUT;
			return -1;
		}
	}
	return 0;
}

/* Asks the receiver for B's rx_packets; waits up to 1 s for the answer. */
static unsigned long long rx_sample(struct shared *sh)
{
	double t0 = now_s();

	put(sh->sample, 1);
	while (get(sh->sample) && now_s() - t0 < 1.0)
		sleep_ms(1);
	return get(sh->rx_frames);
}

/*
 * B back in this namespace and up, as it was before: the receiver moves it
 * back when it ends, or its namespace's end does when it was killed (the
 * kernel returns a physical interface to the initial namespace, shortly
 * after). Waits up to 5 s for it. 0 when it is back up.
 */
static int give_back(int fd, const char *ifb)
{
	double t0 = now_s();

	while (!if_nametoindex(ifb) && now_s() - t0 < 5)
		sleep_ms(10);
	if (iface_up(fd, ifb)) {
		fprintf(stderr, "fgft-tcp: %s is not back: %s\n", ifb,
			strerror(errno));
		return -1;
	}
	return 0;
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: fgft-tcp [-d SECONDS] [-W WARM_SECONDS] [-m WRITE_BYTES] [-w LINK_WAIT_MS] IFACE_A IFACE_B\n");
	exit(2);
}

static long num(const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi)
		print_usage();
	return v;
}

int main(int argc, char **argv)
{
	long secs = 5, warm = 1, msg = 65536, wait_ms = 5000;
	int up[2], down[2], fd, s = -1, opt, status = 0, ifindex;
	unsigned long long b0, b1, tx0, tx1, rx0 = 0, rx1 = 0;
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(PORT) };
	const char *ifa, *ifb;
	double t0, t_conn, ts, te;
	struct timeval tick = { 0, 100000 }, connect_to;
	socklen_t tilen = sizeof(struct tcp_info);
	struct tcp_info ti;
	struct shared *sh;
	static char buf[1 << 20];
	pid_t child;

	while ((opt = getopt(argc, argv, "d:W:m:w:")) != -1) {
		switch (opt) {
		case 'd':
			secs = num(optarg, 1, 3600);
			break;
		case 'W':
			warm = num(optarg, 0, 600);
			break;
		case 'm':
			msg = num(optarg, 1, (long)sizeof(buf));
			break;
		case 'w':
			wait_ms = num(optarg, 0, 600000);
			break;
		default:
			print_usage();
		}
	}
	if (argc - optind != 2)
		print_usage();
	ifa = argv[optind];
	ifb = argv[optind + 1];
	signal(SIGPIPE, SIG_IGN);
	memset(buf, 0x5a, sizeof(buf));

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ifindex = (int)if_nametoindex(ifb);
	if (fd < 0 || !ifindex || !if_nametoindex(ifa) || iface_up(fd, ifa) ||
	    iface_up(fd, ifb)) {
		fprintf(stderr, "fgft-tcp: bring up %s and %s: %s\n", ifa, ifb,
			strerror(errno));
		return 1;
	}
	t0 = now_s();
	while (!(link_ready(ifa) && link_ready(ifb)) &&
	       now_s() - t0 < wait_ms / 1000.0)
		sleep_ms(10);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || pipe(up) || pipe(down)) {
		perror("fgft-tcp: set up");
		return 1;
	}
	memset(sh, 0, sizeof(*sh));
	child = fork();
	if (child < 0) {
		perror("fgft-tcp: fork");
		return 1;
	}
	if (child == 0)
		_exit(receiver(ifb, up[1], down[0], sh, wait_ms));

	if (wait_byte(up[0], 'n') || move_to_ns(ifindex, child)) {
		fprintf(stderr, "fgft-tcp: move %s to the receiver: %s\n", ifb,
			strerror(errno));
		goto fail;
	}
	if (set_addr(fd, ifa, ADDR_A) || write(down[1], "m", 1) != 1 ||
	    wait_byte(up[0], 'l')) {
		fprintf(stderr, "fgft-tcp: set up %s: %s\n", ifa,
			strerror(errno));
		goto fail;
	}
	inet_pton(AF_INET, ADDR_B, &sin.sin_addr);
	connect_to.tv_sec = wait_ms / 1000 + 10;
	connect_to.tv_usec = 0;
	t0 = now_s();
	for (;;) {
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		/*
		 * No call may block for good: connect() waits as long as the
		 * links may take (the stack resends the SYN meanwhile), then
		 * each write the send time-out (tick).
		 */
		if (s >= 0)
			setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &connect_to,
				   sizeof(connect_to));
		if (s >= 0 && !connect(s, (struct sockaddr *)&sin, sizeof(sin))) {
			setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tick,
				   sizeof(tick));
			break;
		}
		if (s >= 0)
			close(s);
		s = -1;
		if (now_s() - t0 > wait_ms / 1000.0 + 10) {
			fprintf(stderr, "fgft-tcp: connect: %s\n",
				strerror(errno));
			goto fail;
		}
		sleep_ms(50);
	}
	t_conn = now_s() - t0;

	ts = now_s() + warm;
	if (send_until(s, buf, msg, ts))
		goto write_failed;
	b0 = get(sh->bytes);
	tx0 = stat_of(ifa, "tx_packets");
	rx0 = rx_sample(sh);
	ts = now_s();
	te = ts + secs;
	if (send_until(s, buf, msg, te))
		goto write_failed;
	b1 = get(sh->bytes);
	te = now_s();
	tx1 = stat_of(ifa, "tx_packets");
	rx1 = rx_sample(sh);
	if (getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &tilen))
		memset(&ti, 0, sizeof(ti));
	close(s);
	s = -1;
	/* The receiver ends at the stream's end, or is stopped. */
	t0 = now_s();
	while (waitpid(child, &status, WNOHANG) == 0) {
		if (now_s() - t0 > 5) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			break;
		}
		sleep_ms(5);
	}
	if (give_back(fd, ifb))
		return 1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "fgft-tcp: the receiver failed\n");
		return 1;
	}
	printf("FGFT-MARK tcp bytes=%llu secs=%.3f mbps=%.2f tx_frames=%llu rx_frames=%llu frame_bytes=%.0f retrans=%u rtt_us=%u connect_ms=%.0f warm=%ld\n",
	       b1 - b0, te - ts, (b1 - b0) * 8 / (te - ts) / 1e6, tx1 - tx0,
	       rx1 - rx0,
	       rx1 > rx0 ? (double)(b1 - b0) / (double)(rx1 - rx0) : 0.0,
	       ti.tcpi_total_retrans, ti.tcpi_rtt, t_conn * 1000, warm);
	fflush(stdout);
	return b1 > b0 ? 0 : 1;

write_failed:
	fprintf(stderr, "fgft-tcp: write: %s\n", strerror(errno));
fail:
	if (s >= 0)
		close(s);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	give_back(fd, ifb);
	return 1;
}
