/*
 *	BIRD -- fibd protocol: export routes to the fibd daemon (BIRD 2 and 3)
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
#include "lib/unaligned.h"
#include "proto/fibd/pending.h"
#include "proto/fibd/version.h"

#include <proto-shim/msg.h>
#include <proto-shim/enc.h>

#define FIBD_DEFAULT_SOCKET	"/run/fibd/fibd.sock"
#define FIBD_DEFAULT_STALE	120		/* seconds fibd keeps our routes after a crash */
#define FIBD_DEFAULT_PENDING	(4 << 20)	/* pending prefixes before the session is dropped */
#define FIBD_MAX_PENDING	(1 << 26)	/* the most a configuration may allow */
/*
 * Past FIBD_EXPORT_HIGH pending changes the glue stops BIRD 3's export runs and
 * BIRD 2's feed runs until fibd has read the set down to FIBD_EXPORT_LOW, but
 * only while fibd reads (it took bytes within FIBD_EXPORT_STALL). BIRD 2's
 * imports push their changes regardless: for them the pending limit is the
 * only bound.
 */
#define FIBD_EXPORT_HIGH	4096
#define FIBD_EXPORT_LOW		(FIBD_EXPORT_HIGH / 2)
#define FIBD_EXPORT_STALL	(1 S_)
#define FIBD_RETRY_MIN		(1 S_)
#define FIBD_RETRY_MAX		(30 S_)

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
  u64 learn_refreshes;			/* refreshes ended: learned routes not sent again dropped */
  u64 connects, disconnects, drops;	/* drops: the pending limit was hit */
  u64 export_pauses;			/* export (BIRD 3) or feed (BIRD 2) stopped at FIBD_EXPORT_HIGH */
  u64 export_corked, export_unread;	/* runs at FIBD_EXPORT_HIGH not stopped: BIRD corked, the socket took nothing for FIBD_EXPORT_STALL */
  u64 bytes_out;
};

/*
 * In BIRD 3 everything here belongs to the protocol's own loop (p->p.loop):
 * its hooks, timers, events and socket all run there; the CLI hooks read it
 * from the main thread with that loop locked. BIRD 2 has one loop for all.
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
  timer *trim_timer;			/* empty chunks back to the kernel while nothing is pending */
  struct ps_dec *dec;			/* fibd's messages */
  u8 drop_pending;			/* the pending limit was hit: drop from the tx event */
  u8 export_paused;			/* channels (1: ip4, 2: ip6) whose export or feed run was skipped at the high-water mark */
  btime last_sent;			/* when the socket last took bytes */
  void (*export_hook[2])(void *);	/* the ip4 and ip6 channels' own export (3) or feed (2) events */

  struct fibd_pending q;		/* changes waiting for the socket */

  u64 commit_ticket;			/* BIRD 3: the main loop's pass its first connect waits for */
  u64 generation;			/* of the open or last full feed */
  uint feeds_open;			/* channels whose initial feed has not ended */
  u8 learn_refreshing;			/* 1 IPv4, 2 IPv6: fibd's refresh of it is open */
  u8 learned_any;			/* 1 IPv4, 2 IPv6: LEARN adds came in this session */
  btime feed_started, feed_ended;
  u64 feed_routes;			/* sent in the last full feed */

  u64 sess_installed, sess_removed;	/* counted by fibd this session (failures-only results) */

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

static inline uint
fibd_put_addr(ip_addr a, byte *buf)
{
  if (ipa_is_ip4(a))
  {
    put_ip4(buf, ipa_to_ip4(a));
    return PS_FAM_V4;
  }
  put_ip6(buf, ipa_to_ip6(a));
  return PS_FAM_V6;
}

static inline ip_addr
fibd_get_addr(u8 fam, const union ps_addr *a)
{
  return (fam == PS_FAM_V4) ? ipa_from_ip4(get_ip4(a->b)) : ipa_from_ip6(get_ip6(a->b));
}

/* session.c: the protocol's body, the same for both BIRDs */
void fibd_key(struct fibd_proto *p, const net_addr *n, u32 metric, struct ps_key *k);
void fibd_notify(struct fibd_proto *p, const net_addr *n, const rte *new, int had_old);
void fibd_channel_fed(struct channel *c);
void fibd_postconfig(struct proto_config *CF);
void fibd_init_common(struct fibd_proto *p, struct proto_config *CF);
int fibd_start(struct proto *P);
void fibd_cleanup(struct proto *P);
struct ps_route *fibd_route_begin(struct fibd_proto *p, const net_addr *n, u32 metric, int dest,
				  const char **why);
const char *fibd_route_nexthop(struct ps_route *r, const struct nexthop *nh);
const char *fibd_route_krt(struct ps_route *r, const eattr *prefsrc, const eattr *realm,
			   const eattr *scope, const eattr *mtu);
int fibd_shutdown(struct proto *P);
int fibd_reconfigure(struct proto *P, struct proto_config *CF);
void fibd_copy_config(struct proto_config *dest, struct proto_config *src);
void fibd_get_status(struct proto *P, byte *buf);
void fibd_show_proto_info(struct proto *P);
void fibd_export_event(void *data);

/* fibd.c: what each BIRD does its own way */
const char *fibd_fill_route(struct fibd_proto *p, const net_addr *n, const rte *e, u32 metric);
u32 fibd_krt_metric(const rte *e);
void fibd_learn(struct fibd_proto *p, const struct ps_route *r);
void fibd_unlearn_all(struct fibd_proto *p);
void fibd_channel_refresh(struct channel *c, int begin);
void fibd_refeed(struct fibd_proto *p);
void fibd_format_time(struct fibd_proto *p, btime t, byte *buf, uint size);
void fibd_channel_resume(struct channel *c);
int fibd_export_corked(void);

#endif
