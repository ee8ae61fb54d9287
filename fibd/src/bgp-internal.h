/*
 * bgp-internal.h: the BGP ingest's state, shared by its files: bgp.c (sessions:
 * connections, messages, timers, reading), bgp_rib.c (a session's prefixes
 * as the peer's routes, ADD-PATH paths) and bgp_peer.c (listening sockets,
 * peers, reload, status). Nothing else includes it.
 */
#ifndef FIBD_BGP_INTERNAL_H
#define FIBD_BGP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "bgp.h"
#include "bgp_msg.h"
#include "conf.h"
#include "owner.h"

#define BGP_HOLD_TIME 90
#define BGP_OPEN_WAIT_S 240 /* the hold timer until the peer's OPEN (RFC 4271 8: large) */
#define BGP_GR_TIME 120     /* the restart time fibd's OPEN states */
#define BGP_DECODE_NS 2000000ull
#define BGP_BUF (3u * BGP_EXT_MSG_MAX) /* a message being applied, and the next ones read */
#define BGP_PATHS_MAX 1024 /* paths of one prefix (ADD-PATH) */
#define BGP_CLOSE_WAIT_MS 5000 /* for a last NOTIFICATION to be written */

enum state { S_OPENSENT, S_OPENCONFIRM, S_ESTABLISHED, S_CLOSING };

extern const char *const bgp_state_names[];

/* One path of a prefix (ADD-PATH): its identifier and next hop. */
struct path {
	uint32_t id;
	uint8_t fam;
	union ps_addr gw;
};

/* A prefix's paths, in a session's hash table. */
struct pentry {
	struct pentry *next;
	uint32_t hash;
	uint8_t fam, plen;
	uint16_t n, cap;
	union ps_addr addr;
	struct path p[];
};

struct peer;

struct session {
	uv_tcp_t tcp;
	uv_timer_t hold, keepalive, stale;
	unsigned handles; /* open: the session is freed when the last one has closed */
	struct peer *peer; /* NULL for a connection refused, and once closing */
	enum state state;
	char addr[INET6_ADDRSTRLEN];
	uint16_t hold_time;
	size_t max; /* the longest message the peer may send */
	struct bgp_session_caps caps;
	bool gr;          /* the routes stay for gr_time when the session is lost */
	bool peer_gr_cap; /* the peer offered graceful restart: it gets fibd's End-of-RIB */
	uint16_t gr_time;
	bool eor[BGP_NFAM]; /* End-of-RIB seen, or the family not carried */
	bool fed;           /* the feed ended (End-of-RIB of every family, or stale_time) */
	struct owner *owner;
	uint8_t *buf;
	size_t len, off;
	bool busy;
	struct session *busy_next;
	bool in_update;
	struct bgp_update upd;
	unsigned run;
	struct pentry **ptab;
	uint32_t pbuckets, pentries;
	unsigned writes;
	bool close_after_write;
	struct session *next;
};

struct peer {
	struct conf_bgp_peer c;
	struct session *s;
	bool seen; /* in the configuration being applied */
	uint64_t updates, prefixes, withdrawn, sessions, refused;
	uint64_t up_since_ms;
	char last_error[160];
};

struct bgp_state {
	uv_loop_t *loop;
	int fds[CONF_BGP_LISTEN_MAX];
	struct conf_bgp_listen listen[CONF_BGP_LISTEN_MAX];
	unsigned n_listen;
	uv_tcp_t listeners[CONF_BGP_LISTEN_MAX];
	unsigned n_listeners;
	struct bgp_local local;
	struct peer *peers[CONF_BGP_PEERS_MAX];
	unsigned n_peers;
	struct session *sessions;
	struct session *busy;
	uv_idle_t decoder;
	bool decoder_on, closing, started;
	struct ps_route pr; /* large: one, reused */
};

extern struct bgp_state bg;

/*
 * What becomes of an established session's routes when it ends. Graceful
 * restart (RFC 4724) applies when the connection is lost without a
 * NOTIFICATION either way: the peer may be restarting.
 */
enum end {
	END_LOST,     /* no NOTIFICATION: kept for the peer's restart time (if it has graceful restart) */
	END_NOTIFIED, /* a NOTIFICATION sent or received: withdrawn, unless the peer persists */
	END_WITHDRAW, /* its configuration changed or went: withdrawn */
};

void bgp_session_end(struct session *s, const struct bgp_error *notify, enum end how, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* bgp.c */
void bgp_on_connection(uv_stream_t *server, int status);

/* bgp_rib.c */
void bgp_announce(struct session *s, const struct bgp_prefix *p, const union ps_addr *gw, uint8_t gw_fam);
void bgp_withdraw(struct session *s, const struct bgp_prefix *p);
void bgp_paths_free(struct session *s);

/* bgp_peer.c */
void bgp_addr_text(int family, const uint8_t *addr, char *text);
struct peer *bgp_peer_by_addr(int family, const uint8_t *addr);
void bgp_set_md5(const struct conf_bgp_peer *p, bool on);

#endif
