/*
 * feed: client sessions on fibd's Unix socket. Feed sessions (BIRD, fibctl feed)
 * state desired routes under a client name; control sessions (fibctl) send
 * requests answered by ctl. Routes belong to the name (an owner), not to the
 * connection, so a feed outlives the session that sent it.
 */
#ifndef FIBD_FEED_H
#define FIBD_FEED_H

#include <stdint.h>

#include <uv.h>

#include <proto-shim/enc.h>

#include "table.h"

#define FEED_SESSIONS_MAX 256
#define FEED_OUT_HIGH (4u << 20)   /* stop reading a session with this much unsent */
#define FEED_OUT_LOW (1u << 20)    /* and read again below this */
#define FEED_STATUS_BATCH PS_STATUS_MAX
#define FEED_STATUS_MSGS 8         /* ROUTE_STATUS messages encoded per flush */
#define FEED_SWEEP_BUDGET 4096     /* routes visited per sweep step */
#define FEED_DECODE_NS 2000000u    /* decoding per callback */
#define FEED_LEARN_OUT_MAX (64u << 20) /* LEARN bytes a session may leave unread */
#define FEED_STREAM_LOW (64u << 10)   /* a streamed answer's next part waits for this little unsent */

struct feed_config {
	const char *socket_path;
	uint8_t protocol;
	const char *server_id;
	uint64_t boot_epoch;
};

struct owner_info {
	const char *name;
	int connected;
	uint64_t routes;
	uint64_t pending;
	uint64_t generation;
	int in_feed;
	int persist;
	uint64_t stale_left_s; /* disconnected within its stale time: seconds left, else 0 */
};

/* feed_init - listen on the socket. Returns 0 or -errno (message logged). */
int feed_init(uv_loop_t *loop, const struct feed_config *cfg);

/* feed_close - close every session and the listening socket; routes stay. */
void feed_close(void);

/*
 * feed_repair - after a rescan of t: write again the routes owners want that
 * fibd installed and the rescan did not see. Bounded steps; done() at the end.
 */
void feed_repair(struct rtable *t, void (*done)(void));

/* feed_learn - a LEARN message (r->learn_op, r->key.table) to the sessions learning its table. */
void feed_learn(const struct ps_route *r);

/* feed_route_done - nl's done callback: report and release as needed. */
void feed_route_done(struct route *r, int err, const char *text);

unsigned feed_session_count(void);
/* feed_owner_name - the client name of an owner slot (route.owner), or NULL. */
const char *feed_owner_name(uint16_t slot);
unsigned feed_owner_count(void);
/* feed_owner_at - information about owner i (0..feed_owner_count()-1); -ENOENT past the end. */
int feed_owner_at(unsigned i, struct owner_info *ret);

/* Counters for status. */
struct feed_stats {
	uint64_t sessions_accepted;
	uint64_t sessions_failed;   /* closed after a protocol error */
	uint64_t msgs_in;
	uint64_t routes_in;
	uint64_t withdraws_in;
	uint64_t conflicts;
	uint64_t status_sent;
};
void feed_get_stats(struct feed_stats *ret);

#endif
