/*
 * clockshim moves a process's wall clock by REDISTEST_CLOCK_OFFSET_NS
 * nanoseconds (negative: behind), as a server whose clock is off would
 * see it. Preloaded (LD_PRELOAD) into redis-server by redistest's
 * StartSkewed: TIME, key expiry and everything else that reads
 * CLOCK_REALTIME move together; the monotonic clocks are left alone.
 *
 * libfaketime does this in general, but it cannot start Debian's
 * redis-server: redis-server is linked with jemalloc, whose first
 * clock_gettime runs before libfaketime can initialize. This shim needs no
 * initialization that allocates: it reads the real time with the raw
 * system call and adds the offset read once at load.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long offset_ns;

__attribute__((constructor)) static void load_offset(void) {
	const char *s = getenv("REDISTEST_CLOCK_OFFSET_NS");
	offset_ns = s ? atoll(s) : 0;
}

static int is_realtime(clockid_t id) {
	return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	int r = (int)syscall(SYS_clock_gettime, id, ts);
	if (r == 0 && is_realtime(id)) {
		long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns;
		ts->tv_sec = (time_t)(ns / 1000000000LL);
		ts->tv_nsec = (long)(ns % 1000000000LL);
	}
	return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
	(void)tz;
	struct timespec ts;
	int r = clock_gettime(CLOCK_REALTIME, &ts);
	if (r == 0 && tv) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return r;
}

time_t time(time_t *t) {
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
		return (time_t)-1;
	}
	if (t) {
		*t = ts.tv_sec;
	}
	return ts.tv_sec;
}
