// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-fsw: a file-system workload that checks itself (issue 17).
 *
 *   fgft-fsw [-n OPS] [-s SEED] [-f MAX_ENTRIES] [-b MAX_FILE_BYTES]
 *            [-m MODEL] [-l LOG] DIR
 *   fgft-fsw -c -m MODEL DIR
 *
 * Run mode: OPS operations (default 2000) chosen by a seeded generator
 * over a tree under DIR (which must exist and be empty): create, write
 * (random offset and length, random bytes), read back, rename (across
 * directories too), truncate (shrink or grow), mkdir, rmdir, readdir,
 * unlink, statfs, and names that do not stay (a hard link, a symbolic link
 * or a FIFO, checked and removed again; skipped where the file system has
 * none, EPERM or EOPNOTSUPP). The program keeps a model of the tree, the content of every
 * file byte by byte, and changes it only for operations that completed
 * (a short write by what was written). A read or a readdir is checked
 * against the model at once; at the end every file and directory is. -l
 * logs each completed operation, one line each; -m saves the model (path,
 * size and FNV-1a hash of each file, each directory) for a later check.
 *
 * Check mode (-c): verifies DIR against a saved model (after a remount, a
 * fsck, a reboot): the same entries, sizes and contents, nothing else.
 *
 * Output, one summary line:
 *
 *   FGFT-MARK fsw mode=run|check seed=S ops=N ok=K failed=E bad=B
 *             files=F dirs=D bytes=T first_fail=OP:ERRNO ns=W
 *
 * failed counts operations the file system refused (an error to the
 * application), bad counts mismatches between the tree and the model (lost
 * or corrupted data); ns is the run's wall time (the operations and the final
 * sync and check, CLOCK_MONOTONIC). The first 20 of each are printed as
 * FGFT-MARK fsw-fail n=I op=OP path=P errno=E and FGFT-MARK fsw-bad
 * path=P why=W.
 *
 * Exit status: 0 when nothing was bad, 1 when something was (or DIR
 * cannot be used), 2 on a usage error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define MAX_ENTRIES	256
#define NAME_LEN	16
#define PATH_LEN	256
#define SHOW		20

struct entry {
	int used;
	int dir;
	int parent;		/* index of the parent directory, -1: DIR */
	char name[NAME_LEN];
	unsigned char *data;	/* files: the expected content */
	size_t size;
};

static struct entry ent[MAX_ENTRIES];
static const char *top;
static uint64_t rng;
static unsigned long next_name, failed, bad, ok_ops;
static char first_fail[64] = "-";
static FILE *oplog;

static uint64_t next(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static unsigned long pick(unsigned long n)
{
	return n ? next() % n : 0;
}

static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* DIR/a/b/name of entry @i (@i < 0: DIR itself), into PATH_LEN bytes. */
static void path_of(int i, char *out)
{
	int chain[MAX_ENTRIES], n = 0;
	size_t len;

	for (; i >= 0 && n < MAX_ENTRIES; i = ent[i].parent)
		chain[n++] = i;
	len = snprintf(out, PATH_LEN, "%s", top);
	while (n-- > 0 && len < PATH_LEN)
		len += snprintf(out + len, PATH_LEN - len, "/%s",
				ent[chain[n]].name);
}

static int depth(int i)
{
	return i < 0 ? 0 : 1 + depth(ent[i].parent);
}

static int free_slot(void)
{
	int i;

	for (i = 0; i < MAX_ENTRIES; i++)
		if (!ent[i].used)
			return i;
	return -1;
}

/* A random used entry that is a directory (@dir) or a file; -1: none. */
static int random_entry(int dir)
{
	int cand[MAX_ENTRIES], n = 0, i;

	for (i = 0; i < MAX_ENTRIES; i++)
		if (ent[i].used && ent[i].dir == dir)
			cand[n++] = i;
	return n ? cand[pick(n)] : -1;
}

/* DIR or a random directory of the model. */
static int random_parent(void)
{
	int d = random_entry(1);

	return pick(3) == 0 || d < 0 ? -1 : d;
}

static int has_children(int d)
{
	int i;

	for (i = 0; i < MAX_ENTRIES; i++)
		if (ent[i].used && ent[i].parent == d)
			return 1;
	return 0;
}

static void op_failed(unsigned long n, const char *op, const char *path, int err)
{
	if (failed++ < SHOW)
		printf("FGFT-MARK fsw-fail n=%lu op=%s path=%s errno=%d\n", n, op,
		       path, err);
	if (!strcmp(first_fail, "-"))
		snprintf(first_fail, sizeof(first_fail), "%s:%d", op, err);
}

static void mismatch(const char *path, const char *why)
{
	if (bad++ < SHOW)
		printf("FGFT-MARK fsw-bad path=%s why=%s\n", path, why);
}

static void done(unsigned long n, const char *op, const char *path, long a,
		 long b)
{
	ok_ops++;
	if (oplog)
		fprintf(oplog, "%lu %s %s %ld %ld\n", n, op, path, a, b);
}

/* Reads file @path whole into a fresh buffer; its size in @n. */
static unsigned char *slurp(const char *path, size_t *n)
{
	size_t cap = 4096, len = 0;
	unsigned char *buf = malloc(cap);
	int fd = open(path, O_RDONLY);
	ssize_t r;

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (;;) {
		if (len == cap) {
			unsigned char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r <= 0) {
			if (r < 0) {
				free(buf);
				buf = NULL;
			}
			break;
		}
		len += r;
	}
	close(fd);
	*n = len;
	return buf;
}

/* The content of file entry @i against the model. */
static void check_file(int i)
{
	char path[PATH_LEN];
	unsigned char *buf;
	size_t n;

	path_of(i, path);
	buf = slurp(path, &n);
	if (!buf) {
		mismatch(path, "unreadable");
		return;
	}
	if (n != ent[i].size)
		mismatch(path, "size");
	else if (n && memcmp(buf, ent[i].data, n))
		mismatch(path, "content");
	free(buf);
}

/* The names in directory @d (-1: DIR) against the model's children. */
static void check_dir(int d)
{
	char path[PATH_LEN], seen[MAX_ENTRIES] = { 0 };
	struct dirent *de;
	DIR *dir;
	int i, found;

	path_of(d, path);
	dir = opendir(path);
	if (!dir) {
		mismatch(path, "opendir");
		return;
	}
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		found = 0;
		for (i = 0; i < MAX_ENTRIES; i++) {
			if (ent[i].used && ent[i].parent == d &&
			    !strcmp(ent[i].name, de->d_name)) {
				seen[i] = found = 1;
				break;
			}
		}
		if (!found)
			mismatch(path, "extra-entry");
	}
	closedir(dir);
	for (i = 0; i < MAX_ENTRIES; i++)
		if (ent[i].used && ent[i].parent == d && !seen[i])
			mismatch(path, "missing-entry");
}

static void check_all(void)
{
	int i;

	check_dir(-1);
	for (i = 0; i < MAX_ENTRIES; i++) {
		if (!ent[i].used)
			continue;
		if (ent[i].dir)
			check_dir(i);
		else
			check_file(i);
	}
}

static void new_entry(int i, int dir, int parent, const char *prefix)
{
	memset(&ent[i], 0, sizeof(ent[i]));
	ent[i].used = 1;
	ent[i].dir = dir;
	ent[i].parent = parent;
	snprintf(ent[i].name, NAME_LEN, "%s%lu", prefix, next_name++);
}

/* Resizes file entry @i's model to @size, zero-filling what grows. */
static int model_resize(int i, size_t size)
{
	unsigned char *nd = realloc(ent[i].data, size ? size : 1);

	if (!nd)
		return -1;
	if (size > ent[i].size)
		memset(nd + ent[i].size, 0, size - ent[i].size);
	ent[i].data = nd;
	ent[i].size = size;
	return 0;
}

static void op_create(unsigned long n)
{
	int i = free_slot(), parent = random_parent(), fd;
	char path[PATH_LEN];

	if (i < 0)
		return;
	new_entry(i, 0, parent, "f");
	ent[i].used = 0;	/* not in the model until it exists */
	path_of(i, path);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0) {
		op_failed(n, "create", path, errno);
		return;
	}
	if (close(fd) < 0) {
		op_failed(n, "close", path, errno);
		/* The file exists: the model keeps it. */
	}
	ent[i].used = 1;
	done(n, "create", path, 0, 0);
}

static void op_write(unsigned long n, size_t max_bytes)
{
	int i = random_entry(0), fd;
	unsigned char buf[4096];
	char path[PATH_LEN];
	size_t off, len, k;
	ssize_t w;

	if (i < 0)
		return;
	path_of(i, path);
	off = pick(ent[i].size + 512);
	len = 1 + pick(sizeof(buf));
	if (off >= max_bytes)
		off = pick(max_bytes);
	if (off + len > max_bytes)
		len = max_bytes - off;
	if (!len)
		return;
	for (k = 0; k < len; k++)
		buf[k] = (unsigned char)next();
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		op_failed(n, "open-w", path, errno);
		return;
	}
	w = pwrite(fd, buf, len, off);
	if (w < 0)
		op_failed(n, "write", path, errno);
	if (w > 0) {
		if (off + w > ent[i].size && model_resize(i, off + w) < 0) {
			mismatch(path, "model-oom");
			close(fd);
			return;
		}
		memcpy(ent[i].data + off, buf, w);
		done(n, "write", path, off, w);
	}
	if (close(fd) < 0)
		op_failed(n, "close", path, errno);
}

static void op_read(unsigned long n)
{
	int i = random_entry(0);
	char path[PATH_LEN];

	if (i < 0)
		return;
	path_of(i, path);
	check_file(i);
	done(n, "read", path, ent[i].size, 0);
}

static void op_rename(unsigned long n)
{
	int i = random_entry(pick(4) == 0), parent = random_parent();
	char from[PATH_LEN], to[PATH_LEN], old[NAME_LEN];
	int old_parent, p;

	if (i < 0)
		return;
	/* A directory does not move into itself or below itself. */
	for (p = parent; p >= 0; p = ent[p].parent)
		if (p == i)
			return;
	if (ent[i].dir && parent >= 0 && depth(parent) + 1 > 3)
		return;
	path_of(i, from);
	old_parent = ent[i].parent;
	memcpy(old, ent[i].name, NAME_LEN);
	ent[i].parent = parent;
	snprintf(ent[i].name, NAME_LEN, "%s%lu", ent[i].dir ? "d" : "f",
		 next_name++);
	path_of(i, to);
	if (rename(from, to) < 0) {
		op_failed(n, "rename", from, errno);
		ent[i].parent = old_parent;
		memcpy(ent[i].name, old, NAME_LEN);
		return;
	}
	done(n, "rename", to, 0, 0);
}

static void op_truncate(unsigned long n, size_t max_bytes)
{
	int i = random_entry(0);
	char path[PATH_LEN];
	size_t len;

	if (i < 0)
		return;
	path_of(i, path);
	len = pick(ent[i].size + 2048);
	if (len > max_bytes)
		len = max_bytes;
	if (truncate(path, len) < 0) {
		op_failed(n, "truncate", path, errno);
		return;
	}
	if (model_resize(i, len) < 0) {
		mismatch(path, "model-oom");
		return;
	}
	done(n, "truncate", path, len, 0);
}

static void op_mkdir(unsigned long n)
{
	int i = free_slot(), parent = random_parent();
	char path[PATH_LEN];

	if (i < 0 || depth(parent) >= 3)
		return;
	new_entry(i, 1, parent, "d");
	ent[i].used = 0;
	path_of(i, path);
	if (mkdir(path, 0755) < 0) {
		op_failed(n, "mkdir", path, errno);
		return;
	}
	ent[i].used = 1;
	done(n, "mkdir", path, 0, 0);
}

static void op_rmdir(unsigned long n)
{
	int i = random_entry(1);
	char path[PATH_LEN];

	if (i < 0 || has_children(i))
		return;
	path_of(i, path);
	if (rmdir(path) < 0) {
		op_failed(n, "rmdir", path, errno);
		return;
	}
	ent[i].used = 0;
	done(n, "rmdir", path, 0, 0);
}

static void op_readdir(unsigned long n)
{
	int d = random_parent();
	char path[PATH_LEN];

	path_of(d, path);
	check_dir(d);
	done(n, "readdir", path, 0, 0);
}

static void op_unlink(unsigned long n)
{
	int i = random_entry(0);
	char path[PATH_LEN];

	if (i < 0)
		return;
	path_of(i, path);
	if (unlink(path) < 0) {
		op_failed(n, "unlink", path, errno);
		return;
	}
	free(ent[i].data);
	ent[i].data = NULL;
	ent[i].used = 0;
	done(n, "unlink", path, 0, 0);
}

/* The file system has no such kind of name (VFAT: links, FIFOs). */
static int unsupported(int err)
{
	return err == EPERM || err == EOPNOTSUPP;
}

/*
 * statfs, or a name that does not stay: a hard link to a file, a symbolic
 * link or a FIFO made in a directory, checked, and removed again.  The
 * model does not change, so a name left behind is found as an extra entry.
 */
static void op_names(unsigned long n)
{
	int i = random_entry(0), k = pick(4), ok;
	char dir[PATH_LEN], path[PATH_LEN], other[PATH_LEN + 24];
	char buf[PATH_LEN];
	struct statvfs sv;
	struct stat st;
	ssize_t len;

	path_of(random_parent(), dir);
	snprintf(other, sizeof(other), "%s/n%lu", dir, n);
	if (k == 0) {
		if (statvfs(top, &sv) < 0) {
			op_failed(n, "statfs", top, errno);
			return;
		}
		if (!sv.f_bsize || sv.f_bfree > sv.f_blocks ||
		    sv.f_ffree > sv.f_files)
			mismatch(top, "statfs");
		done(n, "statfs", top, sv.f_bfree, sv.f_ffree);
		return;
	}
	if (k == 1) {
		if (i < 0)
			return;
		path_of(i, path);
		if (link(path, other) < 0) {
			if (!unsupported(errno))
				op_failed(n, "link", other, errno);
			return;
		}
		ok = !lstat(other, &st) && st.st_nlink == 2 &&
		     (size_t)st.st_size == ent[i].size;
	} else if (k == 2) {
		snprintf(path, sizeof(path), "to/%lu", n);
		if (symlink(path, other) < 0) {
			if (!unsupported(errno))
				op_failed(n, "symlink", other, errno);
			return;
		}
		len = readlink(other, buf, sizeof(buf) - 1);
		ok = len >= 0 && (size_t)len == strlen(path) &&
		     !memcmp(buf, path, len);
	} else {
		if (mknod(other, S_IFIFO | 0644, 0) < 0) {
			if (!unsupported(errno))
				op_failed(n, "mknod", other, errno);
			return;
		}
		ok = !lstat(other, &st) && S_ISFIFO(st.st_mode);
	}
	if (!ok)
		mismatch(other, k == 1 ? "link" : k == 2 ? "symlink" : "fifo");
	if (unlink(other) < 0) {
		op_failed(n, "unlink", other, errno);
		return;
	}
	done(n, k == 1 ? "link" : k == 2 ? "symlink" : "mknod", other, 0, 0);
}

static int save_model(const char *file)
{
	char path[PATH_LEN];
	FILE *f = fopen(file, "w");
	size_t tl = strlen(top);
	int i;

	if (!f)
		return -1;
	for (i = 0; i < MAX_ENTRIES; i++) {
		if (!ent[i].used)
			continue;
		path_of(i, path);
		if (ent[i].dir)
			fprintf(f, "d %s\n", path + tl + 1);
		else
			fprintf(f, "f %s %zu %016llx\n", path + tl + 1, ent[i].size,
				(unsigned long long)fnv(ent[i].data, ent[i].size));
	}
	return fclose(f);
}

/*
 * Check mode: every line of @file against DIR, then each directory's
 * entries against the lines below it.
 */
static int check_model(const char *file)
{
	char line[PATH_LEN + 64], rel[PATH_LEN], path[PATH_LEN * 2];
	char names[MAX_ENTRIES][PATH_LEN];
	int nnames = 0, k;
	FILE *f = fopen(file, "r");
	unsigned long long hash;
	unsigned char *buf;
	size_t size, n;
	struct stat st;

	if (!f) {
		perror("fgft-fsw: model");
		return -1;
	}
	while (fgets(line, sizeof(line), f) && nnames < MAX_ENTRIES) {
		if (line[0] == 'd' && sscanf(line, "d %255s", rel) == 1) {
			snprintf(path, sizeof(path), "%s/%s", top, rel);
			if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
				mismatch(path, "missing-dir");
		} else if (line[0] == 'f' &&
			   sscanf(line, "f %255s %zu %llx", rel, &size, &hash) == 3) {
			snprintf(path, sizeof(path), "%s/%s", top, rel);
			buf = slurp(path, &n);
			if (!buf)
				mismatch(path, "unreadable");
			else if (n != size)
				mismatch(path, "size");
			else if (fnv(buf, n) != hash)
				mismatch(path, "content");
			free(buf);
		} else {
			continue;
		}
		snprintf(names[nnames++], PATH_LEN, "%s", rel);
	}
	fclose(f);
	/* Nothing else: walk the tree, each name must be in the model. */
	for (k = -1; k < nnames; k++) {
		struct dirent *de;
		DIR *dir;
		char sub[PATH_LEN * 2], want[PATH_LEN * 2];
		int j, found;

		if (k >= 0) {
			snprintf(sub, sizeof(sub), "%s/%s", top, names[k]);
			if (stat(sub, &st) < 0 || !S_ISDIR(st.st_mode))
				continue;
		} else {
			snprintf(sub, sizeof(sub), "%s", top);
		}
		dir = opendir(sub);
		if (!dir) {
			mismatch(sub, "opendir");
			continue;
		}
		while ((de = readdir(dir))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (k >= 0)
				snprintf(want, sizeof(want), "%s/%s", names[k],
					 de->d_name);
			else
				snprintf(want, sizeof(want), "%s", de->d_name);
			found = 0;
			for (j = 0; j < nnames && !found; j++)
				found = !strcmp(names[j], want);
			if (!found)
				mismatch(sub, "extra-entry");
		}
		closedir(dir);
	}
	return 0;
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: fgft-fsw [-n OPS] [-s SEED] [-f MAX_ENTRIES] [-b MAX_FILE_BYTES]\n"
		"                [-m MODEL] [-l LOG] DIR\n"
		"       fgft-fsw -c -m MODEL DIR\n");
}

int main(int argc, char **argv)
{
	unsigned long ops = 2000, seed = 1, max_entries = 64, n, files = 0, dirs = 0;
	size_t max_bytes = 65536, bytes = 0;
	const char *model = NULL, *log = NULL;
	int opt, check = 0, i;
	struct timespec t0, t1;
	struct dirent *de;
	DIR *d;

	while ((opt = getopt(argc, argv, "n:s:f:b:m:l:ch")) != -1) {
		switch (opt) {
		case 'n':
			ops = strtoul(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoul(optarg, NULL, 0);
			break;
		case 'f':
			max_entries = strtoul(optarg, NULL, 0);
			break;
		case 'b':
			max_bytes = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			model = optarg;
			break;
		case 'l':
			log = optarg;
			break;
		case 'c':
			check = 1;
			break;
		default:
			print_usage();
			return 2;
		}
	}
	if (argc - optind != 1 || (check && !model) || !max_entries ||
	    max_entries > MAX_ENTRIES || !max_bytes) {
		print_usage();
		return 2;
	}
	top = argv[optind];
	if (check) {
		if (check_model(model) < 0)
			return 1;
		printf("FGFT-MARK fsw mode=check bad=%lu\n", bad);
		return bad ? 1 : 0;
	}
	d = opendir(top);
	if (!d) {
		perror("fgft-fsw: DIR");
		return 1;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "lost+found")) {
			fprintf(stderr, "fgft-fsw: %s is not empty\n", top);
			closedir(d);
			return 1;
		}
	closedir(d);
	if (log) {
		oplog = fopen(log, "w");
		if (!oplog) {
			perror("fgft-fsw: log");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	for (n = 0; n < ops; n++) {
		unsigned long used = 0, r = pick(100);

		for (i = 0; i < MAX_ENTRIES; i++)
			used += ent[i].used;
		if (r < 15) {
			if (used < max_entries)
				op_create(n);
		} else if (r < 40) {
			op_write(n, max_bytes);
		} else if (r < 58) {
			op_read(n);
		} else if (r < 66) {
			op_rename(n);
		} else if (r < 74) {
			op_truncate(n, max_bytes);
		} else if (r < 79) {
			if (used < max_entries)
				op_mkdir(n);
		} else if (r < 83) {
			op_rmdir(n);
		} else if (r < 88) {
			op_readdir(n);
		} else if (r < 93) {
			op_names(n);
		} else {
			op_unlink(n);
		}
	}
	sync();
	check_all();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (i = 0; i < MAX_ENTRIES; i++) {
		if (!ent[i].used)
			continue;
		if (ent[i].dir) {
			dirs++;
		} else {
			files++;
			bytes += ent[i].size;
		}
	}
	if (model && save_model(model) < 0) {
		perror("fgft-fsw: model");
		bad++;
	}
	if (oplog)
		fclose(oplog);
	printf("FGFT-MARK fsw mode=run seed=%lu ops=%lu ok=%lu failed=%lu bad=%lu files=%lu dirs=%lu bytes=%zu first_fail=%s ns=%lld\n",
	       seed, ops, ok_ops, failed, bad, files, dirs, bytes, first_fail,
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
	       (t1.tv_nsec - t0.tv_nsec));
	return bad ? 1 : 0;
}
