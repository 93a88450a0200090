// SPDX-License-Identifier: GPL-2.0
/*
 * fgft-time: run a command and print how long it took, in nanoseconds of
 * CLOCK_MONOTONIC, as a marker:
 *
 *   FGFT-MARK time label=<label> ns=<elapsed> rc=<exit status>
 *
 * usage: fgft-time LABEL COMMAND [ARG...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/wait.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long long t0, t1;
	int status, rc;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: fgft-time LABEL COMMAND [ARG...]\n");
		return 2;
	}
	t0 = now_ns();
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		return 2;
	}
	t1 = now_ns();
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("FGFT-MARK time label=%s ns=%lld rc=%d\n", argv[1], t1 - t0, rc);
	fflush(stdout);
	return rc;
}
