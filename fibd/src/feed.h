/*
 * feed: client sessions on fibd's Unix socket (front layer). Feed sessions
 * (BIRD, fibctl feed) state desired routes under a client name (owner.h);
 * control sessions (fibctl) send requests answered by ctl. Routes belong to
 * the name, not to the connection, so a feed outlives the session that sent it.
 */
#ifndef FIBD_FEED_H
#define FIBD_FEED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include <proto-shim/enc.h>

#include "access.h"
#include "ctl.h"
#include "status.h"
#include "table.h"

#define FEED_SESSIONS_MAX 256
#define FEED_OUT_HIGH (4u << 20)   /* stop reading a session with this much unsent */
#define FEED_OUT_LOW (1u << 20)    /* and read again below this */
#define FEED_STATUS_BATCH PS_STATUS_MAX
#define FEED_STATUS_MSGS 8         /* ROUTE_STATUS messages encoded per flush */
#define FEED_DECODE_NS 2000000u    /* decoding per callback */
#define FEED_LEARN_OUT_MAX (64u << 20) /* LEARN bytes a session may leave unread */
#define FEED_STREAM_LOW (64u << 10)   /* a streamed answer's next part waits for this little unsent */
#define FEED_CONTROL_TIMEOUT_S 60     /* a control session whose reader stalls this long is closed */

struct feed_config {
	const char *socket_path;
	uint8_t protocol;
	const char *server_id;
	uint64_t boot_epoch;
};

/*
 * feed_set_access - the groups and the control timeout, at start and on a
 * reload; sessions already open keep what they were allowed. With a group set,
 * the socket is open to every local user (mode 0666) and fibd decides per peer;
 * without, it is 0660: fibd's user and group only.
 */
void feed_set_access(const struct feed_access *a);

/* feed_init - listen on the socket. Returns 0 or -errno (message logged). */
int feed_init(uv_loop_t *loop, const struct feed_config *cfg);

/* feed_close - close every session and the listening socket; routes stay. */
void feed_close(void);


/* feed_wake - a session's streamed answer has more to send (ctl: a watch event, a diff). */
void feed_wake(void *session);

/* feed_learn - a LEARN message (r->learn_op, r->key.table) to the sessions learning its table. */
void feed_learn(const struct ps_route *r);
/*
 * feed_learn_refresh - a learn dump of table/family begins or has ended
 * (enum ps_refresh_phase), to the sessions learning it that asked for it.
 */
void feed_learn_refresh(uint32_t table, uint8_t family, uint8_t phase);

/* feed_get_stats - the counters of sessions, for status (status_set_sessions). */
void feed_get_stats(struct session_stats *ret);

#endif
