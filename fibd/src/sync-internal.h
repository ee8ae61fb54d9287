/*
 * sync-internal.h: the sync engine's state and helpers, shared by its
 * files: sync.c (a job's dump, its apply and replay), sync_notify.c (route
 * notifications: kept during a scan, or acted on) and sync_queue.c (which
 * table is scanned next, and who asks). Nothing else includes it.
 */
#ifndef FIBD_SYNC_INTERNAL_H
#define FIBD_SYNC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "kmsg.h"
#include "sync.h"

enum { SCAN_NONE, SCAN_QUEUED, SCAN_RUNNING, SCAN_DONE };

struct sync_state {
	uv_loop_t *loop;
	/* after a valid dump: its keys applied to the table a budget at a time */
	uv_idle_t applier;
	size_t apply_at;
	uint64_t apply_adopted;
	bool apply_rescan;
	bool busy;          /* a job (dump, apply, repair) is under way */
	bool dumping;       /* its dump has not ended yet */
	bool learning;      /* the job is a learn dump (every protocol, for learn.c) */
	bool learn_replaying; /* its dump is done; learn.c replays what it kept (sync_on_apply) */
	bool learn_whole;   /* nothing moved under its dump: the refresh ends (else: again) */
	bool relearn;       /* notifications were lost: learn every learned table again (soon) */
	uint64_t changes_at_start, overruns_at_start, writes_at_start;
	bool use_unsure;    /* the dump to use is an unsure one (sync_dump_end) */
	bool use_lost;      /* the monitor lost notifications while it ran */
	bool use_own;       /* IPv6: fibd wrote the table while it ran */
	bool apply_lost;    /* the same, for the dump being applied: scanned again after */
	bool apply_own;     /* the same: its repair waits for another dump (sync_on_apply) */
	uint32_t events;    /* link and address changes, losses: no rescan union spans them */
	unsigned tables_named; /* how many tables the monitor was told of (sync_tables_changed) */
	uv_timer_t soon;    /* debounces rescans asked for by link and address events */
	uv_timer_t periodic;
	uint32_t interval_ms;
	bool read_attrs; /* turn the routes of a dump into attributes (the daemon does) */
	struct {
		int ifindex;
		char name[PS_IFNAMSIZ];
	} ifnames[64];
	uv_timer_t retry;   /* the earliest backoff of a queued table ends */
	bool open;
	uint8_t protocol;
	uint64_t order;     /* stamps queued tables */
	struct rtable *cur;
	struct scan_key *keys;
	size_t n_keys, cap_keys;
	bool keys_failed;
	/* notifications of the table being scanned, kept until its snapshot is applied */
	bool keeping;
	char *kept;
	size_t kept_len, kept_cap, kept_at;
	bool kept_overflow;
	struct sync_stats st;
};

extern struct sync_state sy;

/* sync.c */
void sync_mark_queued(struct rtable *t);
void sync_keep_start(void);
void sync_job_end(bool ok, const char *why);
void sync_dump_route(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx);
void sync_dump_end(int result, void *ctx);

/* sync_notify.c */
void sync_keep_stop(void);
void sync_route_notified(struct rtable *t, const struct nlmsghdr *nlh, const struct kmsg_rt *kr);

/* sync_queue.c */
void sync_start_next(void);
void sync_queue_learn(struct rtable *t);
void sync_on_retry(uv_timer_t *h);
void sync_on_soon(uv_timer_t *h);
void sync_on_periodic(uv_timer_t *h);

#endif
