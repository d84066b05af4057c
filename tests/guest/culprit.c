/* The injected culprit of the --explain guest test (tests/guest/README.md): a SCHED_FIFO 99
 * thread named `culprit`, pinned to one CPU, busy for BUSY_MS every PERIOD_MS until SECONDS
 * have passed. Built static on the host by checks.py (busybox has no chrt): with glibc for
 * amd64, with musl for arm64, whose sched_setscheduler() is a stub that fails with ENOSYS, so
 * the policy is set with the system call itself.
 * With LOG, each spin's first and last clock reading (CLOCK_MONOTONIC ns) is appended to it as a
 * line "START END", written after the spin and before the sleep: the ground truth of the
 * `rtscope noise` check (noise_checks.injected).
 * Usage: culprit CPU BUSY_MS PERIOD_MS SECONDS [LOG] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: culprit CPU BUSY_MS PERIOD_MS SECONDS [LOG]\n");
        return 2;
    }
    int log = -1;
    if (argc == 6 && (log = open(argv[5], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644)) < 0) {
        perror(argv[5]);
        return 1;
    }
    int cpu = atoi(argv[1]);
    long long busy = atoll(argv[2]) * 1000000LL, period = atoll(argv[3]) * 1000000LL;
    long long end = now_ns() + atoll(argv[4]) * 1000000000LL;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    struct sched_param p = {0};
    p.sched_priority = 99;
    if (sched_setaffinity(0, sizeof set, &set) || syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &p)) {
        perror("culprit");
        return 1;
    }
    prctl(PR_SET_NAME, "culprit", 0, 0, 0);
    for (long long next = now_ns(); next < end; next += period) {
        long long first = now_ns(), last = first;
        while (last < next + busy) {
            last = now_ns();
        }
        if (log >= 0) {
            char line[64];
            int n = snprintf(line, sizeof line, "%lld %lld\n", first, last);
            if (write(log, line, n) != n) {
                perror("culprit log");
                return 1;
            }
        }
        struct timespec t = {(next + period) / 1000000000LL, (next + period) % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
    }
    return 0;
}
