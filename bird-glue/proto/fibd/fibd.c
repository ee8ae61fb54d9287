/*
 *	BIRD -- fibd protocol: export routes to the fibd daemon
 *
 *	Can be freely distributed and used under the terms of the GNU GPL.
 */

/**
 * DOC: fibd
 *
 * The fibd protocol replaces the kernel protocol for export. It does no netlink
 * work at all: it hands each exported route to fibd, a separate daemon, over a
 * Unix socket (the proto-shim protocol, docs/PROTOCOL.md), and fibd installs it
 * in the kernel in batches and keeps the kernel in sync. So BIRD never waits for
 * a kernel ACK and never dumps a kernel table.
 *
 * Never blocking: rt_notify() only encodes the change and records it in the
 * pending set, one entry per route key (family, prefix, length, metric), kept
 * in a FIFO queue and found through a hash. A later change of a key still
 * pending replaces the entry in place, so repeated changes coalesce and the
 * pending set is bounded by the size of the table, not by the update rate.
 * The tx event copies whole
 * messages from the head of the queue into the socket's buffer, a bounded
 * number of buffers per run, and goes on from the tx hook when the socket
 * drains. Past the pending limit the session is dropped: the reconnect brings a
 * full feed.
 *
 * Flow control: BIRD 2 feeds a channel in its feed event, 256 nets per run,
 * one run after another on BIRD's loop. The glue wraps that event (from
 * feed_begin, once per feed: each channel start makes a new one): a run is
 * skipped while the pending set holds FIBD_EXPORT_HIGH changes or more and
 * fibd reads, and the event is scheduled again once fibd has read the set
 * down to FIBD_EXPORT_LOW. Meanwhile the feed's routes wait in BIRD's table,
 * not as encoded messages here, and the pending set's hash stays small:
 * growing it to a full table's size took BIRD's loop for milliseconds at a
 * time. Imports still push their changes (rt_notify runs inside them); for
 * them the pending limit is the only bound.
 *
 * Sessions: connect (nonblocking; an AF_UNIX connect finishes or fails at
 * once), HELLO, WELCOME. Only then does the protocol go UP, which makes BIRD
 * run a clean initial feed of every channel; it is framed by FEED_BEGIN and
 * FEED_END of a new generation, so fibd withdraws whatever an earlier BIRD or
 * session had installed and this one no longer exports (mark and sweep). While
 * disconnected the protocol stays in START: BIRD sends it nothing, and fibd
 * keeps the kernel's routes for the stale time. The queue is empty whenever a
 * session starts, so the feed's markers and routes go out in order.
 *
 * Shutdown: BYE with FLUSH withdraws our routes, as the kernel protocol does,
 * unless persist is on, BIRD restarts gracefully, or the protocol restarts
 * (reconfiguration, birdc restart): then fibd keeps them and the next full feed
 * prunes what is gone.
 *
 * The session, the export and the CLI are common code (session.c, shared
 * with BIRD 3); this file is what BIRD 2 does its own way: route attributes
 * (rta), learn, refeed, and the protocol's hooks.
 */

#undef LOCAL_DEBUG

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <fcntl.h>

#include "nest/bird.h"
#include "nest/iface.h"
#include "nest/protocol.h"
#include "nest/route.h"
#include "nest/cli.h"
#include "conf/conf.h"
#include "lib/string.h"
#include "lib/unaligned.h"
#include "sysdep/unix/krt.h"

#include <proto-shim/msg.h>
#include <proto-shim/enc.h>
#include <proto-shim/dec.h>

#include "proto/fibd/fibd.h"

/*
 * The route as fibd's ROUTE message (into p->msg), with the kernel
 * protocol's attributes: krt_prefsrc, krt_realm, krt_scope and krt_mtu.
 * Returns NULL, or why fibd's protocol cannot carry the route.
 */
const char *
fibd_fill_route(struct fibd_proto *p, const net_addr *n, const rte *e, u32 metric)
{
  const rta *a = e->attrs;
  const char *why;
  struct ps_route *r = fibd_route_begin(p, n, metric, a->dest, &why);

  if (why)
    return why;
  if (a->dest == RTD_UNICAST)
    for (const struct nexthop *nh = &a->nh; nh; nh = nh->next)
      if (why = fibd_route_nexthop(r, nh))
	return why;
  return fibd_route_krt(r, ea_find(a->eattrs, EA_KRT_PREFSRC), ea_find(a->eattrs, EA_KRT_REALM),
			ea_find(a->eattrs, EA_KRT_SCOPE), ea_find(a->eattrs, EA_KRT_MTU));
}

/* The route's krt_metric, which an export filter may set (0 if none). */
u32
fibd_krt_metric(const rte *e)
{
  return ea_get_int(e->attrs->eattrs, EA_KRT_METRIC, 0);
}

static int
fibd_preexport(struct channel *c, rte *e)
{
  /* Not our own routes (learn), and only what the kernel can hold. */
  if (e->src->proto == c->proto)
    return -1;
  switch (e->attrs->dest)
  {
  case RTD_UNICAST: case RTD_BLACKHOLE: case RTD_UNREACHABLE: case RTD_PROHIBIT:
    return 0;
  default:
    return -1;
  }
}

static void
fibd_rt_notify(struct proto *P, struct channel *c UNUSED, net *net, rte *new, rte *old)
{
  fibd_notify((struct fibd_proto *) P, net->n.addr, new, !!old);
}


/*
 *	Learning foreign kernel routes (learn on)
 */

/* One route per kernel metric: its own source, so that deleting one metric keeps the others. */
static inline struct rte_src *
fibd_learn_source(struct fibd_proto *p, u32 metric)
{
  return metric ? rt_get_source(&p->p, metric) : p->p.main_source;
}

/* Of two learned routes of a prefix, the lower kernel metric wins, as in the kernel. */
static int
fibd_rte_better(rte *new, rte *old)
{
  return ea_get_int(new->attrs->eattrs, EA_KRT_METRIC, 0) < ea_get_int(old->attrs->eattrs, EA_KRT_METRIC, 0);
}

/* A LEARN add or delete, imported as the kernel protocol imports alien routes. */
void
fibd_learn(struct fibd_proto *p, const struct ps_route *r)
{
  struct channel *c = (r->key.family == PS_FAM_V4) ? p->ip4 : p->ip6;
  net_addr n;
  ip_addr prefix = fibd_get_addr(r->key.family, &r->key.prefix);
  struct rte_src *src = fibd_learn_source(p, r->key.metric);

  if (!c || c->channel_state != CS_UP)
    return;
  if (r->key.family == PS_FAM_V4)
    net_fill_ip4(&n, ipa_to_ip4(prefix), r->key.plen);
  else
    net_fill_ip6(&n, ipa_to_ip6(prefix), r->key.plen);

  if (r->learn_op == PS_LEARN_DELETE)
  {
    p->st.unlearned++;
    rte_update2(c, &n, NULL, src);
    return;
  }

  rta *a = allocz(RTA_MAX_SIZE);
  a->source = RTS_INHERIT;
  a->scope = SCOPE_UNIVERSE;
  a->pref = c->preference;
  switch (r->type)
  {
  case PS_RT_BLACKHOLE:		a->dest = RTD_BLACKHOLE; break;
  case PS_RT_UNREACHABLE:	a->dest = RTD_UNREACHABLE; break;
  case PS_RT_PROHIBIT:		a->dest = RTD_PROHIBIT; break;
  default:
    a->dest = RTD_UNICAST;
    struct nexthop *list = NULL;
    for (uint i = 0; i < r->n_nexthops; i++)
    {
      const struct ps_nexthop *x = &r->nh[i];
      struct nexthop *nh = (r->n_nexthops == 1) ? &a->nh : allocz(NEXTHOP_MAX_SIZE);
      const char *why = NULL;

      nh->iface = x->ifname[0] ? if_find_by_name(x->ifname) : NULL;
      nh->weight = x->weight - 1;
      nh->flags = (x->flags & PS_NH_ONLINK) ? RNF_ONLINK : 0;
      if (x->gw_family)
	nh->gw = fibd_get_addr(x->gw_family, &x->gw);
      if (!nh->iface)
	why = "an interface BIRD does not know (is protocol device configured?)";
      else if (ipa_nonzero(nh->gw))
      {
	neighbor *nbr = neigh_find(&p->p, nh->gw, nh->iface, (nh->flags & RNF_ONLINK) ? NEF_ONLINK : 0);
	if (!nbr || (nbr->scope == SCOPE_HOST))
	  why = "a next hop that is no neighbor";
      }
      if (why)
      {
	p->st.learn_skipped++;
	log_rl(&p->log_tbf, L_WARN "%s: not learning %N: %s", p->p.name, &n, why);
	return;
      }
      if (r->n_nexthops > 1)
	nexthop_insert(&list, nh);
    }
    if (r->n_nexthops > 1)
      nexthop_link(a, list);
  }

  ea_list *ea = allocz(sizeof(ea_list) + 2 * sizeof(eattr));
  ea->flags = EALF_SORTED;
  ea->count = 2;
  ea->attrs[0] = (eattr) { .id = EA_KRT_SOURCE, .type = EAF_TYPE_INT, .u.data = r->protocol };
  ea->attrs[1] = (eattr) { .id = EA_KRT_METRIC, .type = EAF_TYPE_INT, .u.data = r->key.metric };
  a->eattrs = ea;

  p->st.learned++;
  rte *e = rte_get_temp(a, src);
  e->pflags = 0;
  rte_update2(c, &n, e, src);
}

/* The session is over: what was learned through it may be stale; fibd sends it all again. */
void
fibd_unlearn_all(struct fibd_proto *p)
{
  if (!p->cf->learn)
    return;
  for (int i = 0; i < 2; i++)
  {
    struct channel *c = i ? p->ip6 : p->ip4;
    if (c && c->channel_state == CS_UP)
    {
      rt_refresh_begin(c->table, c);
      rt_refresh_end(c->table, c);
    }
  }
}

/* A route refresh of a channel that is up begins (begin) or ends. */
void
fibd_channel_refresh(struct channel *c, int begin)
{
  if (begin)
    rt_refresh_begin(c->table, c);
  else
    rt_refresh_end(c->table, c);
}

/* fibd asks for a full feed (REFEED): feed every channel again. */
void
fibd_refeed(struct fibd_proto *p)
{
  if (p->ip4 && p->ip4->channel_state == CS_UP)
    channel_request_feeding(p->ip4);
  if (p->ip6 && p->ip6->channel_state == CS_UP)
    channel_request_feeding(p->ip6);
}

void
fibd_format_time(struct fibd_proto *p UNUSED, btime t, byte *buf, uint size)
{
  tm_format_real_time(buf, size, config->tf_proto.fmt1, t);
}

/* BIRD 2 has no cork. */
int
fibd_export_corked(void)
{
  return 0;
}

/* A feed begins, from its event's first run: wrap the event (a new one each channel start). */
static void
fibd_feed_begin(struct channel *c, int initial UNUSED)
{
  struct fibd_proto *p = (void *) c->proto;

  if (c->feed_event->hook != fibd_export_event)
  {
    p->export_hook[c == p->ip6] = c->feed_event->hook;
    c->feed_event->hook = fibd_export_event;
  }
}

/* Feed again what fibd_export_event (session.c) stopped. */
void
fibd_channel_resume(struct channel *c)
{
  if (c->export_state == ES_FEEDING && c->feed_event->hook == fibd_export_event)
    ev_schedule_work(c->feed_event);
}


/*
 *	Protocol glue
 */

static struct proto *
fibd_init(struct proto_config *CF)
{
  struct proto *P = proto_new(CF);
  struct fibd_proto *p = (void *) P;

  fibd_init_common(p, CF);
  P->preexport = fibd_preexport;
  P->rt_notify = fibd_rt_notify;
  P->feed_begin = fibd_feed_begin;
  P->feed_end = fibd_channel_fed;
  P->rte_better = fibd_rte_better;
  return P;
}

struct protocol proto_fibd = {
  .name =		"fibd",
  .template =		"fibd%d",
  .class =		PROTOCOL_FIBD,
  .preference =		DEF_PREF_INHERITED,
  .channel_mask =	NB_IP4 | NB_IP6,
  .proto_size =		sizeof(struct fibd_proto),
  .config_size =	sizeof(struct fibd_config),
  .postconfig =		fibd_postconfig,
  .init =		fibd_init,
  .start =		fibd_start,
  .shutdown =		fibd_shutdown,
  .cleanup =		fibd_cleanup,
  .reconfigure =	fibd_reconfigure,
  .copy_config =	fibd_copy_config,
  .get_status =		fibd_get_status,
  .show_proto_info =	fibd_show_proto_info,
};

void
fibd_build(void)
{
  proto_build(&proto_fibd);
}
