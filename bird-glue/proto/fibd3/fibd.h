/*
 *	BIRD 3 -- fibd protocol: export routes to the fibd daemon
 *
 *	Can be freely distributed and used under the terms of the GNU GPL.
 */

#ifndef _BIRD_FIBD_H_
#define _BIRD_FIBD_H_

#include "nest/bird.h"
#include "nest/protocol.h"
#include "nest/route.h"
#include "lib/socket.h"
#include "lib/timer.h"
#include "lib/event.h"
#include "lib/lists.h"
#include "proto/fibd/pending.h"

#include <proto-shim/msg.h>
#include <proto-shim/enc.h>

#define FIBD_DEFAULT_SOCKET	"/run/fibd/fibd.sock"
#define FIBD_DEFAULT_STALE	120		/* seconds fibd keeps our routes after a crash */
#define FIBD_DEFAULT_PENDING	(4 << 20)	/* pending prefixes before the session is dropped */
#define FIBD_RETRY_MIN		(1 S_)
#define FIBD_RETRY_MAX		(30 S_)

/* BIRD 3: the protocol gets its own loop (and thread), off the main one. */
#define FIBD_CF_LOOP(cf)	((cf)->loop_order = DOMAIN_ORDER(proto))

struct fibd_config {
  struct proto_config c;
  const char *socket;			/* fibd's Unix socket */
  u32 table;				/* kernel table */
  u32 metric;				/* kernel priority; 0: krt_metric of each route */
  uint merge_paths;			/* ECMP limit, 0: off */
  u32 stale_time;			/* seconds, sent in HELLO */
  u32 pending_limit;			/* prefixes waiting for the socket */
  u8 learn;
  u8 persist;
  u8 graceful_restart;
};

struct fibd_metric {
  u32 metric;
  struct fib_node n;			/* last: the address follows it */
};

struct fibd_stats {
  u64 routes_sent, withdraws_sent;	/* encoded into the socket */
  u64 installed, removed, failed, waiting, rejected; /* ROUTE_STATUS results */
  u64 encode_errors;			/* routes fibd's protocol cannot carry */
  u64 learned, unlearned, learn_skipped;	/* LEARN adds imported, deletes, not importable */
  u64 connects, disconnects, drops;	/* drops: the pending limit was hit */
  u64 bytes_out;
};

/*
 * Everything here belongs to the protocol's own loop (p->p.loop): its hooks,
 * timers, events and socket all run there. The CLI hooks read it from the main
 * thread with that loop locked.
 */
struct fibd_proto {
  struct proto p;
  struct channel *ip4, *ip6;
  struct fibd_config *cf;

  sock *sk;				/* NULL while not connected */
  int state;				/* FIBD_S_* */
  timer *retry_timer;
  btime retry;				/* the next backoff */
  event *tx_event;			/* the pump, bounded per run */
  timer *stop_timer;			/* shutdown: give BYE this long to drain */
  struct ps_dec *dec;			/* fibd's messages */
  u8 drop_pending;			/* the pending limit was hit: drop from the tx event */

  struct fibd_pending q;		/* changes waiting for the socket */

  u64 generation;			/* of the open or last full feed */
  uint feeds_open;			/* channels whose initial feed has not ended */
  btime feed_started, feed_ended;
  u64 feed_routes;			/* sent in the last full feed */

  /* From WELCOME */
  char server_id[65];
  u8 version;
  u64 boot_epoch;
  btime since;				/* connected since (real time) */
  char last_error[128];

  /* metric 0: the metric each exported prefix went with, for its withdraw */
  struct fib metrics4, metrics6;

  /* Scratch: one message (up to 256 next hops) and its encoding, per instance */
  struct ps_msg msg;
  struct ps_buf enc;

  struct tbf log_tbf;
  struct fibd_stats st;
};

enum fibd_state {
  FIBD_S_IDLE,				/* waiting to connect */
  FIBD_S_HELLO,				/* HELLO sent, waiting for WELCOME */
  FIBD_S_UP,				/* exporting */
  FIBD_S_STOPPING,			/* BYE sent, draining */
};

extern struct protocol proto_fibd;

#endif
