/*
 * bench_slab: the slab allocator beside glibc malloc/free, in the same run.
 *
 * For 64- and 128-byte objects:
 *   - throughput of alloc+free pairs: batches (1 M allocs, then frees in random
 *     order) and steady churn (1 M live, random free + alloc);
 *   - RSS after growing to 2 M objects and shrinking to 20 k in random order, with
 *     cleanup run to completion (slab) or free alone and malloc_trim(0) (malloc).
 *     Twice: the 20 k survivors spread at random (worst case), and the 20 k
 *     survivors allocated together (one stable peer's routes, while a flapping
 *     peer's 1.98 M go). Each case runs in a fresh child process;
 *   - the longest single cleanup call, in visits and in microseconds.
 * Figures only: nothing is asserted. Run it from bench/run.sh (release build).
 */
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "slab.h"

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t
xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
shuffle(uint32_t *a, size_t n)
{
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = xorshift() % (i + 1);
		uint32_t t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}

static long
rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The two allocators behind one interface. */
struct alloc_ops {
	const char *name;
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *p);
	void (*tidy)(void *ctx, unsigned *ret_max_visits, double *ret_max_us);
};

static void *
m_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return malloc(size);
}

static void
m_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static void
m_tidy(void *ctx, unsigned *ret_max_visits, double *ret_max_us)
{
	double t = now();
	(void)ctx;
	malloc_trim(0);
	*ret_max_visits = 0;
	*ret_max_us = (now() - t) * 1e6;
}

static void *
s_alloc(void *ctx, size_t size)
{
	(void)size;
	return slab_alloc(ctx);
}

static void
s_free(void *ctx, void *p)
{
	slab_free(ctx, p);
}

static void
s_tidy(void *ctx, unsigned *ret_max_visits, double *ret_max_us)
{
	unsigned maxv = 0;
	double maxus = 0;

	while (slab_cleanup_pending(ctx)) {
		double t = now();
		int v = slab_cleanup(ctx);
		double us = (now() - t) * 1e6;
		if ((unsigned)v > maxv)
			maxv = (unsigned)v;
		if (us > maxus)
			maxus = us;
	}
	*ret_max_visits = maxv;
	*ret_max_us = maxus;
}

static const struct alloc_ops ops_malloc = { "malloc", m_alloc, m_free, m_tidy };
static const struct alloc_ops ops_slab = { "slab", s_alloc, s_free, s_tidy };

/*
 * Throughput in million alloc+free pairs per second. The slab gets a cleanup
 * step every 4096 frees, as fibd's loop would run it.
 */
static double
bench_batches(const struct alloc_ops *o, void *ctx, size_t size)
{
	enum { N = 1000000, ROUNDS = 5 };
	void **objs = malloc(N * sizeof(*objs));
	uint32_t *order = malloc(N * sizeof(*order));
	double t;

	for (uint32_t i = 0; i < N; i++)
		order[i] = i;
	shuffle(order, N);
	t = now();
	for (int r = 0; r < ROUNDS; r++) {
		for (uint32_t i = 0; i < N; i++) {
			objs[i] = o->alloc(ctx, size);
			*(volatile uint64_t *)objs[i] = i;
		}
		for (uint32_t i = 0; i < N; i++) {
			o->free(ctx, objs[order[i]]);
			if (o == &ops_slab && (i & 4095) == 0)
				slab_cleanup(ctx);
		}
	}
	t = now() - t;
	free(objs);
	free(order);
	return (double)N * ROUNDS / t / 1e6;
}

static double
bench_churn(const struct alloc_ops *o, void *ctx, size_t size)
{
	enum { LIVE = 1000000, OPS = 5000000 };
	void **objs = malloc(LIVE * sizeof(*objs));
	double t;

	for (uint32_t i = 0; i < LIVE; i++)
		objs[i] = o->alloc(ctx, size);
	t = now();
	for (uint32_t i = 0; i < OPS; i++) {
		uint32_t k = (uint32_t)(xorshift() % LIVE);
		o->free(ctx, objs[k]);
		objs[k] = o->alloc(ctx, size);
		*(volatile uint64_t *)objs[k] = i;
		if (o == &ops_slab && (i & 4095) == 0)
			slab_cleanup(ctx);
	}
	t = now() - t;
	for (uint32_t i = 0; i < LIVE; i++)
		o->free(ctx, objs[i]);
	free(objs);
	return (double)OPS / t / 1e6;
}

struct rss_result {
	long base_kib, peak_kib, after_free_kib, after_tidy_kib;
	unsigned max_visits;
	double max_us;
};

/* Grow to 2 M, shrink to 20 k, tidy: one case, in a process of its own. */
static void
rss_case(const struct alloc_ops *o, size_t size, int clustered, struct rss_result *ret)
{
	enum { N = 2000000, KEEP = 20000 };
	struct rss_result r = { 0 };
	void **objs = malloc(N * sizeof(*objs));
	uint32_t *order = malloc(N * sizeof(*order));
	struct slab *s = o == &ops_slab ? slab_new(size, "bench", 0) : NULL;

	for (uint32_t i = 0; i < N; i++)
		order[i] = i;
	/* Clustered: keep objects 0..KEEP-1, free the rest in random order. */
	if (clustered)
		shuffle(order + KEEP, N - KEEP);
	else
		shuffle(order, N);
	/* The bookkeeping arrays are resident before the baseline is taken. */
	memset(objs, 0, N * sizeof(*objs));
	r.base_kib = rss_kib();
	for (uint32_t i = 0; i < N; i++) {
		objs[i] = o->alloc(s, size);
		memset(objs[i], 0x5a, size);
	}
	r.peak_kib = rss_kib();
	for (uint32_t i = KEEP; i < N; i++)
		o->free(s, objs[order[i]]);
	r.after_free_kib = rss_kib();
	o->tidy(s, &r.max_visits, &r.max_us);
	r.after_tidy_kib = rss_kib();
	*ret = r;
}

/*
 * Run one RSS case in a fresh process (this program, exec'd again), so that no
 * case inherits another's heap: a forked child would count its parent's pages.
 */
static int
bench_rss(const char *alloc, size_t size, int clustered, struct rss_result *ret)
{
	char sz[16], cl[4];
	int fds[2];
	pid_t pid;
	int ok;

	snprintf(sz, sizeof(sz), "%zu", size);
	snprintf(cl, sizeof(cl), "%d", clustered);
	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDOUT_FILENO);
		execl("/proc/self/exe", "bench_slab", "--rss-case", alloc, sz, cl, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	ok = read(fds[0], ret, sizeof(*ret)) == sizeof(*ret);
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return ok ? 0 : -1;
}

int
main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 128 };

	if (argc == 5 && !strcmp(argv[1], "--rss-case")) {
		struct rss_result r;
		rss_case(!strcmp(argv[2], "slab") ? &ops_slab : &ops_malloc,
		    (size_t)atoi(argv[3]), atoi(argv[4]), &r);
		return write(STDOUT_FILENO, &r, sizeof(r)) == sizeof(r) ? 0 : 1;
	}

	printf("slab vs glibc malloc, same run; throughput in M alloc+free pairs/s\n\n");
	printf("%-5s %-8s %10s %10s %10s %10s\n", "size", "alloc", "batches", "churn",
	    "x malloc", "(churn)");
	for (size_t z = 0; z < 2; z++) {
		size_t size = sizes[z];
		struct slab *s = slab_new(size, "bench", 0);
		double mb = bench_batches(&ops_malloc, NULL, size);
		double mc = bench_churn(&ops_malloc, NULL, size);
		double sb = bench_batches(&ops_slab, s, size);
		double sc = bench_churn(&ops_slab, s, size);
		printf("%-5zu %-8s %10.1f %10.1f\n", size, "malloc", mb, mc);
		printf("%-5zu %-8s %10.1f %10.1f %9.2fx %9.2fx\n", size, "slab", sb, sc, sb / mb,
		    sc / mc);
		slab_destroy(s);
	}

	printf("\nRSS (MiB): grow to 2 M objects, shrink to 20 k in random order, then tidy\n"
	       "(slab: cleanup to completion; malloc: free alone, then malloc_trim(0))\n\n");
	printf("%-5s %-10s %-8s %8s %8s %10s %10s %9s %8s %8s\n", "size", "survivors", "alloc",
	    "live", "peak", "after free", "after tidy", "x live", "visits", "max us");
	for (size_t z = 0; z < 2; z++) {
		for (int clustered = 1; clustered >= 0; clustered--) {
			const struct alloc_ops *all[] = { &ops_malloc, &ops_slab };
			for (int a = 0; a < 2; a++) {
				struct rss_result r;
				double live = 20000.0 * (double)sizes[z] / 1048576.0;
				double after;
				if (bench_rss(all[a]->name, sizes[z], clustered, &r) < 0) {
					printf("%-5zu %-10s %-8s failed\n", sizes[z],
					    clustered ? "clustered" : "random", all[a]->name);
					continue;
				}
				after = (double)(r.after_tidy_kib - r.base_kib) / 1024.0;
				printf("%-5zu %-10s %-8s %8.2f %8.1f %10.1f %10.2f %8.1fx %8u %8.0f\n",
				    sizes[z], clustered ? "clustered" : "random", all[a]->name, live,
				    (double)(r.peak_kib - r.base_kib) / 1024.0,
				    (double)(r.after_free_kib - r.base_kib) / 1024.0, after,
				    after / live, r.max_visits, r.max_us);
			}
		}
	}
	printf("\nRSS figures are the child's resident set minus its resident set before the\n"
	       "first allocation; 'x live' compares with 20 k x object size.\n");
	return 0;
}
