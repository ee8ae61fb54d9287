/*
 * owner: the owners of desired routes (engine layer; docs/design.md). Routes
 * belong to an owner, a client name, not to the connection that sent them, so
 * a feed outlives its session.
 *
 * An owner keeps its routes in a list, a status queue of routes whose outcome
 * its client has not been told, the count of its routes awaiting the kernel
 * (for the PING barrier), and its feed mark: a route stated in the open feed
 * carries the mark, and the end of the feed sweeps (in bounded steps) every
 * route of the owner with an older mark. When its session goes, its routes
 * persist, stay for its stale time, or are withdrawn, as its HELLO asked. An
 * owner with no routes and no session is forgotten.
 *
 * Two owners, one key: the first keeps it; the other is refused (EEXIST). A key
 * whose owner withdrew it (removal pending) can be taken over.
 *
 * After a restart the state file names the clients that fed each table; once
 * every one of them has ended a feed again, sync prunes what none claimed.
 *
 * The front (feed.c) holds the sessions; an owner knows its session only as an
 * opaque pointer, and tells it through the ready hook that results wait.
 */
#ifndef FIBD_OWNER_H
#define FIBD_OWNER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include <proto-shim/msg.h>

#include "state.h"
#include "table.h"

#define OWNERS_MAX 1024
#define OWNER_SWEEP_BUDGET 4096 /* routes visited per sweep step */

struct owner {
	uint16_t slot;
	char name[PS_NAME_MAX + 1];
	void *session;   /* its connected feed session (feed.c), or NULL */
	int uid, pid;    /* that session's peer, -1 if none */
	struct route *routes; /* through onext/oprev */
	uint64_t n_routes;
	struct route *sq_head, *sq_tail; /* status queue, through snext */
	uint64_t pending; /* routes awaiting the kernel */
	uint16_t mark;    /* routes sent in the open feed carry it; compared for equality */
	uint64_t generation;
	bool in_feed;
	struct route *sweep; /* next route to look at in a sweep, or NULL */
	bool sweeping;
	struct owner *sweep_next;
	/* From the last HELLO: what happens to the routes when the session goes. */
	uint32_t stale_time;
	bool persist;
	uint64_t stale_until; /* uv_now() ms when its routes go, 0 if not stale */
	bool quiet;          /* its session reads no outcome of its routes (a BGP peer) */
	uint8_t fed[TABLE_MAX / 8]; /* the tables (by index) it fed: the state file keeps them */
};

struct owner_hooks {
	/*
	 * ready - the owner's session has results to send, or a sweep of its
	 * routes ended (a PONG may be due). session is struct owner.session.
	 */
	void (*ready)(void *session);
};

int owner_init(uv_loop_t *loop, const struct owner_hooks *hooks);

/* owner_close - fibd stops: no more sweeps or stale withdrawals; every route stays. */
void owner_close(void);

/* owner_find - the owner of a name, or NULL; owner_get makes it (NULL: OWNERS_MAX reached, or no memory). */
struct owner *owner_find(const char *name);
struct owner *owner_get(const char *name);

/*
 * owner_route - the owner states a route (key: pr's prefix, plen and tos in
 * table, with metric). Returns 0, or EEXIST (another owner holds the key) or
 * ENOMEM, with the reason in why.
 */
int owner_route(struct owner *o, uint32_t table, uint32_t metric, const struct ps_route *pr, char *why,
    size_t why_len);

/* owner_withdraw - the owner withdraws a route of its own (anything else: nothing happens). */
void owner_withdraw(struct owner *o, uint32_t table, uint32_t metric, const struct ps_key *k);

/* owner_feed_begin, owner_feed_end - a feed (a generation) opens; it ends: sweep what it did not state. */
void owner_feed_begin(struct owner *o, uint64_t generation);
void owner_feed_end(struct owner *o);

/* owner_withdraw_all - every route of the owner, in bounded steps (BYE with FLUSH). */
void owner_withdraw_all(struct owner *o);

/*
 * owner_session_back - a session (its peer uid and pid) took the owner's name:
 * no longer stale; what happens when it goes is as its HELLO says.
 */
void owner_session_back(struct owner *o, void *session, int uid, int pid, uint32_t stale_time,
    bool persist);

/* owner_set_quiet - its session reads no route outcomes (BGP): none is queued for it. */
void owner_set_quiet(struct owner *o, bool quiet);

/*
 * owner_session_gone - its session went (closed, failed, BYE without FLUSH):
 * results nobody will read are dropped, an unfinished feed is abandoned (not
 * swept), and its routes persist, stay for its stale time, or are withdrawn.
 */
void owner_session_gone(struct owner *o);

/*
 * owner_route_done - the writer's done hook: the outcome of a route's write
 * (nl.h). Queues it for the owner's client and says so (ready).
 */
void owner_route_done(struct route *r, int err, const char *text);

/* owner_status_sent - a route popped off its owner's status queue was told to the client. */
void owner_status_sent(struct route *r);

/* ---- after a restart ---- */

/*
 * owner_await - at start, from the state file: client `name` fed table (id,
 * family) before. Once every client that fed a table has ended a feed, sync
 * prunes the table's unclaimed routes (prune_table_claimed).
 */
void owner_await(uint32_t table, uint8_t family, const char *name);

/* owner_each_fed - every (table, client) that fed it, for the state file (state_set_fed_source). */
void owner_each_fed(state_emit_fn emit, void *ctx);

/* ---- for status ---- */

struct owner_info {
	const char *name;
	int connected;
	uint64_t routes;
	uint64_t pending;
	uint64_t generation;
	int in_feed;
	int persist;
	uint64_t stale_left_s; /* disconnected within its stale time: seconds left, else 0 */
	int uid, pid;          /* its session's peer, when connected */
};

unsigned owner_count(void);
/* owner_name - the name of the owner in slot (route.owner), or NULL. */
const char *owner_name(uint16_t slot);
/* owner_info_at - owner i (0..owner_count()-1); -ENOENT past the end. */
int owner_info_at(unsigned i, struct owner_info *ret);

struct owner_stats {
	uint64_t routes_in;
	uint64_t withdraws_in;
	uint64_t conflicts;
};
void owner_get_stats(struct owner_stats *ret);

#endif
