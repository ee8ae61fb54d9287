/*
 * learn: foreign kernel routes, for feed clients that set learn in HELLO (BIRD's
 * `learn on`). A table gets learners when such a session starts; sync then runs
 * a learn dump of it (every protocol), whose foreign routes go to the learners
 * as LEARN adds. Route notifications for a table with learners go to them as
 * LEARN adds and deletes; while a learn dump is queued or running they are kept
 * and replayed in order once it has ended, so that no add from the dump
 * outlives a delete that came during it.
 *
 * A learn dump is also a refresh, for learners that asked (HELLO refresh):
 * LEARN_REFRESH begin before its routes, end once it is whole, so the learner
 * drops what it learned and was not sent again: deletes the monitor lost (an
 * overrun makes sync dump every learned table again). A dump that may lack
 * routes still there (the table moved under it, docs/design.md) sends no
 * end: the refresh stays open until a dump that is whole.
 *
 * Learnable, as BIRD's kernel protocol learns: unicast, blackhole, unreachable
 * and prohibit routes of any protocol but fibd's own and the kernel's (proto
 * kernel: connected networks), and no cloned ones.
 */
#ifndef FIBD_LEARN_H
#define FIBD_LEARN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kmsg.h"
#include "table.h"

#define LEARN_BUFFER_MAX (8u << 20) /* notifications kept during a learn dump, bytes */

struct nlmsghdr;

/*
 * learn_init - protocol: fibd's own rtm_protocol, whose routes are never
 * learned. learn.c reads routes with env, and hands each LEARN route and
 * refresh mark to the hooks (feed.c's feed_learn and feed_learn_refresh, which
 * main.c wires: the engine does not call the front). The hooks are copied.
 */
struct learn_hooks {
	void (*route)(const struct ps_route *r);
	void (*refresh)(uint32_t table, uint8_t family, uint8_t phase); /* enum ps_refresh_phase */
};
void learn_init(uint8_t protocol, const struct kmsg_env *env, const struct learn_hooks *hooks);

/*
 * learn_begin - a learn dump of t is queued: from now on its notifications are
 * kept. Returns false if one was queued already (they are kept already).
 */
bool learn_begin(struct rtable *t);

/* learn_dump_start - t's learn dump is asked for: its refresh begins (again). */
void learn_dump_start(struct rtable *t);

/* learn_dump_msg - one RTM_NEWROUTE of t's learn dump: a LEARN add if learnable. */
void learn_dump_msg(struct rtable *t, const struct nlmsghdr *nlh);

/*
 * learn_end - t's learn dump ended, complete or not. Complete: the kept
 * notifications are to be replayed in order (learn_replay); returns false.
 * Whole too (nothing it lacks may still be there), the refresh ends first.
 * Not complete, or kept notifications overflowed during it: returns true, and
 * another dump must follow (notifications are still kept).
 */
bool learn_end(struct rtable *t, bool complete, bool whole);

/*
 * learn_replay - after learn_end returned false: replay at most `budget` kept
 * notifications (docs/design.md, invariant 2: a callback's work is bounded). Those that
 * come meanwhile are kept and replayed too. Returns true when all are out and
 * keeping has stopped; then *ret_again says that some were lost meanwhile
 * (over LEARN_BUFFER_MAX) and another learn dump must follow.
 */
#define LEARN_REPLAY_BUDGET 2048
bool learn_replay(struct rtable *t, unsigned budget, bool *ret_again);

/* learn_notify - a route notification for t (which has learners). */
void learn_notify(struct rtable *t, const struct nlmsghdr *nlh);

/* learn_forget - t has no learners any more: drop what was kept. */
void learn_forget(struct rtable *t);

struct learn_stats {
	uint64_t sent;        /* LEARN messages handed to sessions */
	uint64_t skipped;     /* foreign routes fibd cannot express (nexthop objects of others, ...) */
	uint64_t replayed;    /* notifications kept during a learn dump and replayed */
	uint64_t overflows;   /* kept notifications over LEARN_BUFFER_MAX: dumped again */
	uint64_t refreshes;   /* learn dumps whole: refresh ends sent */
};
void learn_get_stats(struct learn_stats *ret);

#endif
