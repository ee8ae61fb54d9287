/*
 * slab allocator tests: bounded cleanup that visits only dirtied pages, slot
 * reuse, payload integrity and accounting under random churn, frees behind the
 * cleanup cursor, destroy mid-cleanup, memory handed back, no map/unmap churn at
 * a page boundary, and the owner-thread assertion.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "slab.h"

#define PAGE 4096u
#define MAG 64 /* objects the slab holds back for quick reuse (SLAB_MAG_SIZE) */

static struct slab_stats
stats(const struct slab *s)
{
	struct slab_stats st;
	slab_get_stats(s, &st);
	return st;
}

static void
verify(const struct slab *s, uint64_t *hidden)
{
	int r = slab_verify(s, hidden);
	if (r)
		fail_msg("slab_verify: %d", r);
}

/* Run cleanup to completion; every call within the budget. Returns the total visits. */
static uint64_t
cleanup_all(struct slab *s, unsigned *ret_calls)
{
	uint64_t total = 0;
	unsigned calls = 0;

	while (slab_cleanup_pending(s)) {
		int v = slab_cleanup(s);
		assert_in_range(v, 0, SLAB_CLEANUP_VISITS_MAX);
		total += (uint64_t)v;
		calls++;
		assert_true(calls < 1000000);
	}
	if (ret_calls)
		*ret_calls = calls;
	return total;
}

static void
test_sparse_frees_bounded(void **state)
{
	enum { N = 60000 };
	struct slab *s = slab_new(64, "t", 0);
	void **objs = malloc(N * sizeof(*objs));
	uint64_t hidden, visits;
	unsigned calls, per_page, pages_dirtied;
	(void)state;

	assert_non_null(s);
	assert_non_null(objs);
	for (unsigned i = 0; i < N; i++)
		assert_non_null(objs[i] = slab_alloc(s));
	per_page = (unsigned)stats(s).objs_per_page;
	assert_int_equal(per_page, PAGE / 64);
	visits = cleanup_all(s, NULL); /* nothing dirty yet */
	assert_int_equal(visits, 0);

	for (unsigned i = 0; i < N; i += 7)
		slab_free(s, objs[i]);
	/*
	 * Every full page got a free: all of them are dirtied, once the first MAG
	 * frees, held in the magazine, are handed back by the first cleanup call.
	 */
	pages_dirtied = (unsigned)stats(s).pages_full;
	verify(s, &hidden);
	assert_true(hidden + (MAG * 7 + per_page - 1) / per_page >= pages_dirtied);

	visits = cleanup_all(s, &calls);
	assert_true(stats(s).cleanup_visits_max <= SLAB_CLEANUP_VISITS_MAX);
	/* Proportional to the pages dirtied: one visit each (one page per bucket here). */
	assert_int_equal(visits, MAG + pages_dirtied);
	assert_int_equal(calls,
	    (MAG + pages_dirtied + SLAB_CLEANUP_VISITS_MAX - 1) / SLAB_CLEANUP_VISITS_MAX);
	verify(s, &hidden);
	assert_int_equal(hidden, 0);
	assert_int_equal(stats(s).pages_full, 0);

	/* A second round of frees on partial pages needs no walk at all. */
	for (unsigned i = 1; i < N; i += 7)
		slab_free(s, objs[i]);
	assert_int_equal(cleanup_all(s, NULL), MAG);
	verify(s, NULL);
	slab_destroy(s);
	free(objs);
}

/* The regression a full-walk cleanup fails: one free among 10,000 full pages. */
static void
test_one_free_among_10000_full_pages(void **state)
{
	enum { PAGES = 10000 };
	struct slab *s = slab_new(2048, "t", 0);
	unsigned per_page, n;
	void **objs;
	uint64_t visits;
	(void)state;

	assert_non_null(s);
	per_page = stats(s).objs_per_page;
	n = PAGES * per_page;
	objs = malloc(n * sizeof(*objs));
	assert_non_null(objs);
	for (unsigned i = 0; i < n; i++)
		assert_non_null(objs[i] = slab_alloc(s));
	assert_int_equal(stats(s).pages_full, PAGES);

	slab_free(s, objs[n / 2]);
	visits = cleanup_all(s, NULL);
	/*
	 * 10,000 pages over 4096 buckets: the dirty bucket holds 2 or 3 of them, plus
	 * one visit to hand the object back from the magazine.
	 */
	assert_in_range(visits, 2, 4);
	assert_int_equal(stats(s).pages_full, PAGES - 1);
	assert_int_equal(stats(s).pages_partial, 1);
	/* The freed slot is the next one handed out. */
	assert_ptr_equal(slab_alloc(s), objs[n / 2]);
	verify(s, NULL);
	slab_destroy(s);
	free(objs);
}

static void
test_slot_reuse(void **state)
{
	struct slab *s = slab_new(40, "t", 0);
	void *a, *b, *c;
	(void)state;

	assert_non_null(s);
	assert_int_equal(stats(s).obj_size, 40);
	a = slab_alloc(s);
	b = slab_alloc(s);
	assert_true((char *)b - (char *)a == 40);
	slab_free(s, a);
	c = slab_alloc(s);
	assert_ptr_equal(c, a);
	assert_int_equal(((uintptr_t)c) % 8, 0);
	assert_int_equal(stats(s).live, 2);
	/* Odd sizes round up to 8 bytes. */
	slab_destroy(s);
	s = slab_new(13, "t", 0);
	assert_int_equal(stats(s).obj_size, 16);
	slab_destroy(s);
	assert_null(slab_new(0, "t", 0));
	assert_int_equal(errno, EINVAL);
	assert_null(slab_new(SLAB_OBJ_MAX + 1, "t", 0));
	assert_null(slab_destroy(NULL));
}

/* A deterministic pattern for object `id` of `size` bytes. */
static void
fill(void *obj, size_t size, uint32_t id)
{
	uint32_t *w = obj;
	for (size_t i = 0; i < size / 4; i++)
		w[i] = id * 2654435761u + (uint32_t)i;
}

static int
intact(const void *obj, size_t size, uint32_t id)
{
	const uint32_t *w = obj;
	for (size_t i = 0; i < size / 4; i++)
		if (w[i] != id * 2654435761u + (uint32_t)i)
			return 0;
	return 1;
}

/* Random alloc/free with cleanup steps between: patterns intact, accounting exact. */
static void
test_churn_integrity_and_accounting(void **state)
{
	enum { SLOTS = 100000, OPS = 600000 };
	static const size_t sizes[] = { 24, 64, 128, 1000 };
	(void)state;

	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		struct slab *s = slab_new(sizes[z], "t", 0);
		void **objs = calloc(SLOTS, sizeof(*objs));
		unsigned seed = 12345 + (unsigned)z;
		uint64_t shadow = 0, hidden;

		assert_non_null(s);
		assert_non_null(objs);
		for (unsigned op = 0; op < OPS; op++) {
			unsigned r = (unsigned)rand_r(&seed);
			unsigned i = r % SLOTS;
			/* Phases: grow, shrink, then mixed, so pages empty and refill. */
			unsigned phase = op / (OPS / 3);
			bool want_alloc = phase == 0 ? (r >> 20) % 4 != 0
			    : phase == 1		 ? (r >> 20) % 4 == 0
						 : (r >> 20) % 2 == 0;
			if (objs[i] && !want_alloc) {
				assert_true(intact(objs[i], sizes[z], i));
				slab_free(s, objs[i]);
				objs[i] = NULL;
				shadow--;
			} else if (!objs[i] && want_alloc) {
				objs[i] = slab_alloc(s);
				assert_non_null(objs[i]);
				fill(objs[i], sizes[z], i);
				shadow++;
			}
			if (op % 1000 == 0)
				assert_in_range(slab_cleanup(s), 0, SLAB_CLEANUP_VISITS_MAX);
			if (op % 100000 == 0) {
				verify(s, NULL);
				assert_int_equal(stats(s).live, shadow);
			}
		}
		cleanup_all(s, NULL);
		verify(s, &hidden);
		assert_int_equal(hidden, 0);
		assert_int_equal(stats(s).live, shadow);
		for (unsigned i = 0; i < SLOTS; i++)
			if (objs[i] && !intact(objs[i], sizes[z], i))
				fail_msg("object %u of size %zu was overwritten", i, sizes[z]);
		assert_true(stats(s).cleanup_visits_max <= SLAB_CLEANUP_VISITS_MAX);
		slab_destroy(s);
		free(objs);
	}
}

/* Frees behind the cursor of an unfinished cleanup are found by a later step. */
static void
test_frees_behind_cursor(void **state)
{
	enum { PAGES = 3000 };
	struct slab *s = slab_new(1024, "t", 0);
	unsigned per_page, n;
	uint64_t hidden;
	void **objs;
	(void)state;

	assert_non_null(s);
	per_page = stats(s).objs_per_page;
	n = PAGES * per_page;
	objs = malloc(n * sizeof(*objs));
	assert_non_null(objs);
	for (unsigned i = 0; i < n; i++)
		objs[i] = slab_alloc(s);
	/* Dirty every page in the second half. */
	for (unsigned p = PAGES / 2; p < PAGES; p++)
		slab_free(s, objs[p * per_page]);
	assert_int_equal(slab_cleanup(s), SLAB_CLEANUP_VISITS_MAX); /* unfinished */
	assert_true(slab_cleanup_pending(s));
	verify(s, NULL);
	/*
	 * Free on pages all over: some in buckets already walked (behind the cursor),
	 * some in the bucket being walked, some ahead.
	 */
	for (unsigned p = 0; p < PAGES; p += 3)
		slab_free(s, objs[p * per_page + 1]);
	verify(s, &hidden);
	assert_true(hidden > 0);
	cleanup_all(s, NULL);
	verify(s, &hidden);
	assert_int_equal(hidden, 0);
	assert_int_equal(stats(s).pages_full,
	    PAGES - (PAGES - PAGES / 2) - (PAGES / 2 + 2) / 3);
	slab_destroy(s);
	free(objs);
}

/* Destroy while cleanup is half done: everything unmapped, nothing left. */
static void
test_destroy_mid_cleanup(void **state)
{
	enum { N = 200000 };
	uint64_t before = slab_mapped_total();
	struct slab *s = slab_new(64, "t", 0);
	void **objs = malloc(N * sizeof(*objs));
	(void)state;

	assert_non_null(s);
	assert_non_null(objs);
	for (unsigned i = 0; i < N; i++)
		objs[i] = slab_alloc(s);
	for (unsigned i = 0; i < N; i += 2)
		slab_free(s, objs[i]);
	/* 781 dirty pages: the first step stops at its budget. */
	assert_int_equal(slab_cleanup(s), SLAB_CLEANUP_VISITS_MAX);
	assert_true(slab_cleanup_pending(s));
	assert_true(slab_mapped_total() > before);
	assert_null(slab_destroy(s));
	assert_int_equal(slab_mapped_total(), before);
	free(objs);
}

/* Freeing everything and cleaning up hands the memory back. */
static void
test_empty_pages_returned(void **state)
{
	enum { N = 200000 };
	struct slab *s = slab_new(128, "t", 0);
	void **objs = malloc(N * sizeof(*objs));
	struct slab_stats st;
	static unsigned char vec[2 * 1024 * 1024 / 4096];
	unsigned resident;
	char *chunk;
	void *keep;
	(void)state;

	assert_non_null(s);
	assert_non_null(objs);
	for (unsigned i = 0; i < N; i++) {
		objs[i] = slab_alloc(s);
		memset(objs[i], 0xab, 128);
	}
	st = stats(s);
	assert_true(st.bytes_mapped >= (uint64_t)N * 128);
	assert_true(st.bytes_resident >= (uint64_t)N * 128);

	/* Keep one object in the first chunk so that its released pages stay mapped. */
	keep = objs[0];
	for (unsigned i = N; i-- > 1;)
		slab_free(s, objs[i]);
	cleanup_all(s, NULL);
	st = stats(s);
	verify(s, NULL);
	assert_int_equal(st.live, 1);
	/*
	 * At most: the chunk holding `keep`, chunks holding the four reserve pages,
	 * one vacant chunk in reserve (of 13 that were mapped).
	 */
	assert_true(st.chunks <= 1 + 4 + 1);
	/* Resident: chunk headers (5 pages each), the page holding `keep`, the empty reserve. */
	assert_true(st.bytes_resident <= (st.chunks * 5 + 1 + 4) * PAGE);
	assert_true(st.pages_empty <= 4);
	assert_true(st.chunks_unmapped > 0);
	assert_true(st.pages_returned > 0);

	/* The kernel agrees: of the first chunk's 512 pages, few are resident. */
	chunk = (char *)((uintptr_t)keep & ~(uintptr_t)(2 * 1024 * 1024 - 1));
	assert_int_equal(mincore(chunk, 2 * 1024 * 1024, vec), 0);
	resident = 0;
	for (size_t i = 0; i < sizeof(vec); i++)
		resident += vec[i] & 1;
	assert_true(resident <= 5 + 1 + 4);
	slab_free(s, keep);
	cleanup_all(s, NULL);
	assert_int_equal(stats(s).live, 0);
	slab_destroy(s);
	free(objs);
}

/* Alloc/free ping-pong across a page boundary maps, unmaps and releases nothing new. */
static void
test_ping_pong_at_page_boundary(void **state)
{
	struct slab *s = slab_new(256, "t", 0);
	unsigned per_page;
	struct slab_stats a, b;
	(void)state;

	assert_non_null(s);
	per_page = stats(s).objs_per_page;
	for (unsigned i = 0; i < per_page * 3; i++)
		slab_alloc(s); /* exactly three full pages */
	cleanup_all(s, NULL);
	a = stats(s);
	for (unsigned i = 0; i < 10000; i++) {
		void *o = slab_alloc(s); /* opens a page */
		slab_free(s, o);         /* and empties it again */
		slab_cleanup(s);
	}
	b = stats(s);
	assert_int_equal(b.chunks, a.chunks);
	assert_int_equal(b.chunks_unmapped, a.chunks_unmapped);
	assert_true(b.pages_returned - a.pages_returned <= 1);
	slab_destroy(s);
}

/*
 * Churn with no cleanup job running at all: freed slots are found again by the
 * magazine and by alloc's own bounded step, so nothing new is mapped.
 */
static void
test_churn_reuses_slots_without_cleanup(void **state)
{
	enum { N = 50000 };
	struct slab *s = slab_new(64, "t", 0);
	void **objs = malloc(N * sizeof(*objs));
	unsigned seed = 7;
	uint64_t chunks;
	(void)state;

	assert_non_null(s);
	assert_non_null(objs);
	for (unsigned i = 0; i < N; i++)
		objs[i] = slab_alloc(s);
	chunks = stats(s).chunks;
	for (unsigned round = 0; round < 2000; round++) {
		unsigned idx[100];
		for (unsigned k = 0; k < 100; k++) {
			idx[k] = (unsigned)rand_r(&seed) % N;
			if (objs[idx[k]]) {
				slab_free(s, objs[idx[k]]);
				objs[idx[k]] = NULL;
			}
		}
		for (unsigned k = 0; k < 100; k++)
			if (!objs[idx[k]])
				assert_non_null(objs[idx[k]] = slab_alloc(s));
	}
	assert_int_equal(stats(s).chunks, chunks);
	assert_int_equal(stats(s).live, N);
	assert_true(stats(s).cleanup_visits_max <= SLAB_CLEANUP_VISITS_MAX);
	verify(s, NULL);
	slab_destroy(s);
	free(objs);
}

/* A memory bound: alloc fails cleanly at the limit, and works again after frees. */
static void
test_limit(void **state)
{
	struct slab *s = slab_new(1024, "t", 2 * 1024 * 1024);
	unsigned n = 0;
	void *objs[4096];
	(void)state;

	assert_non_null(s);
	while (n < 4096 && (objs[n] = slab_alloc(s)))
		n++;
	assert_int_equal(n, 507 * 4); /* one chunk: 507 pages of 4 objects */
	assert_int_equal(stats(s).alloc_failures, 1);
	slab_free(s, objs[5]);
	cleanup_all(s, NULL);
	assert_non_null(slab_alloc(s));
	slab_destroy(s);
}

/*
 * References: 0 for NULL, non-zero and distinct for live objects in several
 * chunks, each giving its object back; after chunks are unmapped, new ones
 * reuse the numbers and references still round-trip.
 */
static void
test_refs(void **state)
{
	enum { N = 5000 }; /* 1 KiB objects: about 2,000 a chunk, so three chunks */
	struct slab *s = slab_new(1024, "t", 0);
	static void *objs[N];
	static uint32_t refs[N];
	(void)state;

	assert_non_null(s);
	assert_int_equal(slab_ref(s, NULL), 0);
	assert_null(slab_deref(s, 0));
	for (int round = 0; round < 2; round++) {
		for (unsigned i = 0; i < N; i++) {
			assert_non_null(objs[i] = slab_alloc(s));
			memset(objs[i], (int)(i & 0xff), 1024);
			refs[i] = slab_ref(s, objs[i]);
			assert_int_not_equal(refs[i], 0);
		}
		assert_true(stats(s).chunks >= 3);
		for (unsigned i = 0; i < N; i++) {
			unsigned char *p = slab_deref(s, refs[i]);
			assert_ptr_equal(p, objs[i]);
			assert_int_equal(p[1023], i & 0xff);
			if (i)
				assert_int_not_equal(refs[i], refs[i - 1]);
		}
		for (unsigned i = 0; i < N; i++)
			slab_free(s, objs[i]);
		cleanup_all(s, NULL);
		/* (a chunk stays: the empty-page and vacant reserves) */
		assert_true(stats(s).chunks_unmapped >= (uint64_t)round + 1);
	}
	slab_destroy(s);
}

#ifndef NDEBUG
static void *
alloc_from_other_thread(void *arg)
{
	slab_alloc(arg);
	return NULL;
}
#endif

/* Debug builds refuse a call from a thread that does not own the slab. */
static void
test_owner_thread_asserted(void **state)
{
#ifdef NDEBUG
	(void)state;
	skip();
#else
	pid_t pid;
	int status;
	(void)state;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct slab *s = slab_new(64, "t", 0);
		pthread_t t;
		/* Keep the expected abort quiet and fast. */
		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		pthread_create(&t, NULL, alloc_from_other_thread, s);
		pthread_join(t, NULL);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
#endif
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparse_frees_bounded),
		cmocka_unit_test(test_one_free_among_10000_full_pages),
		cmocka_unit_test(test_slot_reuse),
		cmocka_unit_test(test_churn_integrity_and_accounting),
		cmocka_unit_test(test_frees_behind_cursor),
		cmocka_unit_test(test_destroy_mid_cleanup),
		cmocka_unit_test(test_empty_pages_returned),
		cmocka_unit_test(test_ping_pong_at_page_boundary),
		cmocka_unit_test(test_churn_reuses_slots_without_cleanup),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_refs),
		cmocka_unit_test(test_owner_thread_asserted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
