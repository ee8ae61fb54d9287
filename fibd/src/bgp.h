/*
 * bgp: BGP ingest (front layer; docs/design.md). Any routing daemon feeds
 * fibd over BGP, unpatched: fibd listens, accepts a session from each peer
 * fibd.conf names (bgp_peer), and takes what the peer announces as the routes
 * of a feed client named bgp:NAME, in the peer's kernel table and metric. It
 * sends nothing but OPEN, KEEPALIVE and NOTIFICATION.
 *
 * Feed semantics: the session up begins a feed; End-of-RIB of every family
 * ends it, and what the peer no longer sent goes. A session lost with
 * graceful restart keeps the peer's routes for its restart time; once the peer
 * is back, until its End-of-RIB, or stale_time. Lost without it: withdrawn,
 * unless the peer persists. Codec: bgp_msg.c.
 */
#ifndef FIBD_BGP_H
#define FIBD_BGP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "conf.h"

#define BGP_CLIENT_PREFIX "bgp:"

/*
 * bgp_bind - open the listening sockets of c's bgp_listen lines, before
 * fibd drops its privileges (port 179 needs CAP_NET_BIND_SERVICE). Returns 0, or
 * -errno with err saying which address failed.
 */
int bgp_bind(const struct conf *c, char *err, size_t errlen);

/* bgp_init - listen on the bound sockets and take c's peers. Returns 0 or -errno. */
int bgp_init(uv_loop_t *loop, const struct conf *c);

/*
 * bgp_reconfigure - SIGHUP: peers added, changed (their session is reset, their
 * routes withdrawn) and removed (session closed, routes withdrawn); a new
 * stale_time or persist applies as it is. bgp_listen, bgp_as and
 * bgp_router_id change only with a restart (logged).
 */
void bgp_reconfigure(const struct conf *c);

/* bgp_close - fibd stops: every session is closed (Cease), every route stays as with any client. */
void bgp_close(void);

/* For status: one configured peer. */
struct bgp_peer_info {
	const char *name;
	const char *state; /* "idle", "open sent", "open confirm", "established" */
	char address[46];
	uint32_t as;
	uint32_t table;
	uint64_t updates;
	uint64_t prefixes;   /* announced, withdrawn and treated as withdrawn, counted in UPDATEs */
	uint64_t withdrawn;  /* treated as withdrawn (RFC 7606) */
	uint64_t sessions;   /* established so far */
	uint64_t up_s;       /* seconds since it was established, 0 if it is not */
	bool gr;             /* the session has graceful restart */
	bool addpath;        /* the peer sends path identifiers (either family) */
	char last_error[160]; /* why the last session ended, "" if none */
};

unsigned bgp_peer_count(void);
int bgp_peer_info_at(unsigned i, struct bgp_peer_info *ret);

#endif
