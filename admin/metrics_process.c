/*
 * The process metrics of the Prometheus convention (the client libraries'
 * "process collector": process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds,
 * process_start_time_seconds), read from /proc/self and getrusage/getrlimit
 * at each scrape.  A figure that cannot be read is left out, not made up.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "admin/metrics.h"

/* Entries of /proc/self/fd, less the one opendir holds; -1 when it cannot be read. */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

/*
 * The process's start (s since the epoch): field 22 of /proc/self/stat
 * (starttime, clock ticks after boot) and btime of /proc/stat.  0 when they
 * cannot be read.
 */
static double start_time(void)
{
	char buf[1024], *p;
	unsigned long long ticks = 0, btime = 0;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command (field 2) may hold spaces and ')': the fields after it follow the last ')' */
	if (!(p = strrchr(buf, ')')))
		return 0;
	p++;
	for (int field = 3; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &ticks) != 1)
		return 0;
	if (!(f = fopen("/proc/stat", "r")))
		return 0;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "btime %llu", &btime) == 1)
			break;
	fclose(f);
	return btime && hz > 0 ? (double)btime + (double)ticks / (double)hz : 0;
}

int metrics_put_process(struct strbuf *b)
{
	struct rusage ru;
	struct rlimit rl;
	long page = sysconf(_SC_PAGESIZE), fds = open_fds();
	unsigned long long vsize = 0, rss = 0;
	double start = start_time();
	FILE *f = fopen("/proc/self/statm", "r");
	int have_mem = f && fscanf(f, "%llu %llu", &vsize, &rss) == 2;

	if (f)
		fclose(f);
	if (!getrusage(RUSAGE_SELF, &ru) &&
	    (metrics_head(b, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.") ||
	     metrics_printf(b, "process_cpu_seconds_total %.6f\n",
			    (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
				    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6)))
		return -ENOMEM;
	if (have_mem && page > 0 &&
	    (metrics_head(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.") ||
	     metrics_printf(b, "process_resident_memory_bytes %llu\n", rss * (unsigned long long)page) ||
	     metrics_head(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.") ||
	     metrics_printf(b, "process_virtual_memory_bytes %llu\n", vsize * (unsigned long long)page)))
		return -ENOMEM;
	if (fds >= 0 && (metrics_head(b, "process_open_fds", "gauge", "Number of open file descriptors.") ||
			 metrics_printf(b, "process_open_fds %ld\n", fds)))
		return -ENOMEM;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (metrics_head(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.") ||
	     metrics_printf(b, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur)))
		return -ENOMEM;
	if (start > 0 &&
	    (metrics_head(b, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.") ||
	     metrics_printf(b, "process_start_time_seconds %.2f\n", start)))
		return -ENOMEM;
	return 0;
}
