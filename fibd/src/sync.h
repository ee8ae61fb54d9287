/*
 * sync: the engine that keeps fibd's picture of the kernel true (engine layer;
 * docs/design.md). Before fibd's first write to a (table, family) it dumps that
 * table (dump.c) and adopts the routes that carry fibd's protocol, so that they
 * are replaced, not added over with EXCL and refused; routes of other protocols
 * are left alone. It rescans on link and address changes, monitor overruns,
 * fibctl resync and periodically, repairs what was lost, and prunes adopted
 * routes nobody claims. A dump counts only when it ended with its NLMSG_DONE,
 * no message carried NLM_F_DUMP_INTR and no notification was lost meanwhile;
 * otherwise it is thrown away and retried with backoff, and nothing is adopted
 * or pruned from it (docs/design.md, invariant 5). Notifications during a scan are kept
 * and replayed on its snapshot (invariant 6).
 */
#ifndef FIBD_SYNC_H
#define FIBD_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "prune.h"
#include "table.h"

#define SYNC_RETRY_MIN_MS 100
#define SYNC_RETRY_MAX_MS 10000
#define SYNC_APPLY_BUDGET 2048          /* keys of a valid dump applied per callback */
#define SYNC_RESCAN_DELAY_MS 500        /* link or address changes settle for this long */
#define SYNC_GRACE_DEFAULT 120          /* seconds */
#define SYNC_KEEP_MAX (8u << 20)        /* notifications kept during one scan, bytes */
#define SYNC_CATCH_UP_READS 8           /* monitor catch-ups at most before a dump is judged */
#define SYNC_CHURN_TRIES 3              /* dumps discarded in a row (loss, IPv6 churn) */
#define SYNC_LEARN_RETRY_MS 1000        /* the first pause before a learn dump is taken again */

struct sync_stats {
	uint64_t dumps_started;
	uint64_t dumps_completed;
	uint64_t dumps_interrupted; /* NLM_F_DUMP_INTR; IPv6: changed by others (or may be) */
	uint64_t dumps_failed;      /* error, ENOBUFS, over the cap, notifications lost */
	uint64_t routes_adopted;
	uint64_t routes_pruned; /* adopted, claimed by no client within the grace time */
	uint64_t rescans_triggered; /* by link and address changes or monitor overruns */
	uint64_t routes_changed;    /* found with other attributes than fibd wrote, and rewritten */
	uint64_t foreign_seen;
	uint64_t notifications_replayed; /* kept during a scan, replayed on its snapshot */
	uint64_t keep_overflows;         /* more than SYNC_KEEP_MAX during one: scanned again */
	uint64_t dumps_unsure;           /* IPv6, used under churn or loss: absences not trusted */
	uint64_t repairs_deferred;       /* IPv6 rescans under fibd's writes: repair after another */
	uint64_t repairs_forced;         /* ... repaired all the same (SYNC_CHURN_TRIES) */
};

/*
 * sync_keeps - whether t's scan is under way: its route notifications are then
 * kept (sync_keep) and replayed in order once the scan's snapshot is applied,
 * instead of being acted on at once (docs/design.md, invariant 6). Over SYNC_KEEP_MAX
 * bytes of them, the scan is taken again.
 */
bool sync_keeps(const struct rtable *t);
struct nlmsghdr;
void sync_keep(struct rtable *t, const struct nlmsghdr *nlh);

/*
 * sync_init - the dump socket; adopted routes nobody claims go after grace_s
 * seconds; every table is rescanned every interval_s seconds (0: only when asked).
 */
int sync_init(uv_loop_t *loop, uint8_t protocol, uint32_t grace_s, uint32_t interval_s);

/*
 * sync_rescan_all - dump every scanned table again: routes fibd installed that
 * the kernel no longer has are written again (feed_repair), routes of fibd's
 * that it does not know are adopted. sync_rescan_soon does it after a short
 * delay, so that a burst of link and address events costs one rescan.
 */
void sync_rescan_all(void);
/*
 * sync_learn_table - a learn dump of t (every protocol; learn.c hands the
 * foreign routes to t's learners). Notifications for t are kept from now on and
 * replayed after it.
 */
void sync_learn_table(struct rtable *t);

/* sync_rescan_table - one table (false: its first scan is still to come). */
bool sync_rescan_table(struct rtable *t);

/*
 * sync_route_exists - an add of a route of fibd's failed with EEXIST. If t's
 * last dump was an unsure one, or its last repair took routes for lost, that
 * dump may have missed the route, which is fibd's own: a rescan adopts it (and
 * the add is retried as a replace). Once per repair.
 */
void sync_route_exists(struct rtable *t);
/*
 * sync_route_deleted - the kernel acknowledged fibd's delete of r. While r's
 * table is scanned, kept as the kernel's notification would be (the monitor
 * filters fibd's own off): the dump may predate the delete.
 */
void sync_route_deleted(struct route *r);
void sync_rescan_soon(void);
/*
 * sync_notifications_lost - the monitor lost notifications: sync_rescan_soon,
 * and then a learn dump of every table with learners, which ends their refresh
 * (learn.h) so that they drop what the lost deletes would have taken.
 */
void sync_notifications_lost(void);
/*
 * sync_tables_changed - a table was made: the monitor hears of its routes from
 * now on (tables made otherwise are named before the next dump job).
 */
void sync_tables_changed(void);

void sync_close(void);

/*
 * sync_set_times - a reload: the grace time for scans from now on, and the
 * rescan interval (the periodic timer starts over).
 */
void sync_set_times(uint32_t grace_s, uint32_t interval_s);

/*
 * sync_table_ready - whether a table's first scan is done; if not, one is
 * queued (once) and fibd's writes to the table wait for it.
 */
bool sync_table_ready(struct rtable *t);

/* sync_table_ready_now - no first scan of t is queued or running (asks for none). */
bool sync_table_ready_now(const struct rtable *t);

void sync_get_stats(struct sync_stats *ret);


/*
 * sync_kernel_route - the monitor's route hook: a route notification by
 * someone else (main.c wires it). See sync.c.
 */
struct nlmsghdr;
struct kmsg_rt;
void sync_kernel_route(const struct nlmsghdr *nlh, const struct kmsg_rt *kr);

/* The lookups fibd reads kernel routes with (interface names, nexthop objects of an earlier fibd). */
struct kmsg_env;
extern const struct kmsg_env sync_env;

#endif
