/*
 *	BIRD 3 -- fibd protocol: export routes to the fibd daemon
 *
 *	Can be freely distributed and used under the terms of the GNU GPL.
 */

/**
 * DOC: fibd (BIRD 3)
 *
 * The same protocol as BIRD 2's (read its DOC in fibd/fibd.c first:
 * sessions, feeds, the pending set, shutdown), on BIRD 3's structures. The
 * session, the export and the CLI are common code (session.c); this file is
 * what BIRD 3 does its own way.
 *
 * Its own loop: the protocol config asks for a loop of its own
 * (loop_order, as BGP and BMP do), so rt_notify, the encoding, the pending set,
 * the socket, the timers and the events all run in that loop's thread, never
 * on BIRD's main loop. Timers are started and events sent in that loop
 * (tm_start_in, ev_send_loop); the scratch message and buffer are per
 * instance, as two instances may run at once in two threads.
 *
 * Routes: attributes are ea_lists. Next hops come from ea_gen_nexthop; the
 * kernel attributes are the kernel protocol's own classes (krt_prefsrc,
 * krt_realm, krt_scope, krt_mtu, krt_metric), found by name once at init: a
 * filter that sets krt_metric sets the same attribute for both protocols.
 *
 * Flow control: BIRD 3 pulls exports in the channel's export event, which
 * BIRD sends to this loop when there is something to read. The glue wraps
 * that event (the first rt_notify after each export start does it): a run
 * is skipped while the pending set holds FIBD_EXPORT_HIGH changes or more,
 * and the event is sent again once fibd has read it down to FIBD_EXPORT_LOW.
 * Meanwhile the changes wait in BIRD's table (what the feed has not read yet)
 * and in the table's journal (changes since), not as encoded messages here:
 * a full feed took 114 MiB of pending set without this. A journal that
 * grows past the table's cork threshold stops every BGP session's reading,
 * so the export never waits while BIRD is corked, nor while fibd does not
 * read (a hung fibd): then the pending set takes the changes.
 *
 * Feeds: BIRD 3 has no feed_begin; a feed starts when the protocol goes UP
 * (after WELCOME) and export_fed ends it. export_fed also fires after
 * refeeds, which feeds_open ignores.
 *
 * Learn: LEARN messages are imported as the kernel protocol imports alien
 * routes: an ea_list built in the thread's temporary pool, one source per
 * kernel metric (locked by rt_get_source, unlocked after the update), the
 * lowest metric best.
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

/* The kernel protocol's attribute classes (netlink.c keeps them static): found by name. */
static struct ea_class *fibd_ea_prefsrc, *fibd_ea_realm, *fibd_ea_scope, *fibd_ea_mtu;

/* One of the kernel protocol's attributes, NULL if the class or the attribute is absent. */
static inline eattr *
fibd_krt_attr(const rte *e, struct ea_class *cls)
{
  return cls ? ea_find(e->attrs, cls) : NULL;
}

/*
 * The route as fibd's ROUTE message (into p->msg), with the kernel
 * protocol's attributes: krt_prefsrc, krt_realm, krt_scope and krt_mtu.
 * Returns NULL, or why fibd's protocol cannot carry the route.
 */
const char *
fibd_fill_route(struct fibd_proto *p, const net_addr *n, const rte *e, u32 metric)
{
  eattr *nhea = ea_find(e->attrs, &ea_gen_nexthop);
  const char *why;
  struct ps_route *r = fibd_route_begin(p, n, metric, nhea_dest(nhea), &why);

  if (why)
    return why;
  if (r->type == PS_RT_UNICAST)
    NEXTHOP_WALK(nh, (struct nexthop_adata *) nhea->u.ptr)
      if (why = fibd_route_nexthop(r, nh))
	return why;
  return fibd_route_krt(r, fibd_krt_attr(e, fibd_ea_prefsrc), fibd_krt_attr(e, fibd_ea_realm),
			fibd_krt_attr(e, fibd_ea_scope), fibd_krt_attr(e, fibd_ea_mtu));
}

/* The route's krt_metric, which an export filter may set (0 if none). */
u32
fibd_krt_metric(const rte *e)
{
  return ea_get_int(e->attrs, &ea_krt_metric, 0);
}

/* May run in the main thread too (show route export): no side effects. */
static int
fibd_preexport(struct channel *c, rte *e)
{
  /* Not our own routes (learn), and only what the kernel can hold. */
  if (e->src->owner == &c->proto->sources)
    return -1;
  return krt_capable(e) ? 0 : -1;
}

/*
 * The first connect waits for the commit that started the protocol (version.h):
 * the start takes a ticket and sends fibd_commit_event to the main loop's
 * list, which runs it once the synchronous part of the commit has returned
 * (the first commit's: before the main loop runs at all). A commit whose later
 * phases wait for an old protocol to stop goes on from the main loop after
 * that; the routes of the old configuration are all in the table by then, so
 * the feed misses none that fibd kept, and the new ones come as updates. The
 * pass recorded covers every ticket taken before it ran. The start runs on the
 * main loop, or in the protocol's own loop on a restart (birdc restart): the
 * fences order the ticket against the event's queueing. One event for all
 * instances: it is never freed, so no instance's end leaves it queued in a
 * freed pool.
 */
static _Atomic u64 fibd_commit_asked, fibd_commit_passed;

static void
fibd_commit_pass(void *data UNUSED)
{
  atomic_thread_fence(memory_order_seq_cst);
  atomic_store(&fibd_commit_passed, atomic_load(&fibd_commit_asked));
}

static event fibd_commit_event = { .hook = fibd_commit_pass };

void
fibd_after_commit(struct fibd_proto *p)
{
  p->commit_ticket = atomic_fetch_add(&fibd_commit_asked, 1) + 1;
  atomic_thread_fence(memory_order_seq_cst);
  ev_send(&global_event_list, &fibd_commit_event);
}

int
fibd_commit_pending(struct fibd_proto *p)
{
  return atomic_load(&fibd_commit_passed) < p->commit_ticket;
}

/* BIRD is corked: every BGP session has stopped reading (see Flow control above). */
int
fibd_export_corked(void)
{
  return atomic_load_explicit(&rt_cork.active, memory_order_acquire);
}

/* Export again what fibd_export_event (session.c) stopped; runs in the protocol's loop. */
void
fibd_channel_resume(struct channel *c)
{
  if (c->out_event.hook == fibd_export_event && rt_export_get_state(&c->out_req) != TES_DOWN)
    ev_send(c->out_req.r.target, c->out_req.r.event);
}

static void
fibd_rt_notify(struct proto *P, struct channel *c, const net_addr *n, rte *new, const rte *old)
{
  struct fibd_proto *p = (void *) P;

  /* Called from the channel's export event: wrap it, once per export start. */
  if (c->out_event.hook && c->out_event.hook != fibd_export_event)
  {
    p->export_hook[c == p->ip6] = c->out_event.hook;
    c->out_event.hook = fibd_export_event;
  }
  fibd_notify(p, n, new, !!old);
}


/*
 *	Learning foreign kernel routes (learn on)
 */

/* Of two learned routes of a prefix, the lower kernel metric wins, as in the kernel. */
static int
fibd_rte_better(const rte *new, const rte *old)
{
  return ea_get_int(new->attrs, &ea_krt_metric, 0) < ea_get_int(old->attrs, &ea_krt_metric, 0);
}

static struct rte_owner_class fibd_rte_owner_class = {
  .rte_better = fibd_rte_better,
};

/* The next hops of a learned unicast route; NULL (and why) if BIRD cannot hold them. */
static struct nexthop_adata *
fibd_learn_nexthops(struct fibd_proto *p, const struct ps_route *r, const char **why)
{
  struct nexthop_adata *nhad = tmp_allocz(sizeof(*nhad) + r->n_nexthops * NEXTHOP_MAX_SIZE);
  struct nexthop *nh = &nhad->nh;

  for (uint i = 0; i < r->n_nexthops; i++)
  {
    const struct ps_nexthop *x = &r->nh[i];

    *nh = (struct nexthop) {
      .iface = x->ifname[0] ? if_find_by_name(x->ifname) : NULL,
      .weight = x->weight - 1,
      .flags = (x->flags & PS_NH_ONLINK) ? RNF_ONLINK : 0,
    };
    if (x->gw_family)
      nh->gw = fibd_get_addr(x->gw_family, &x->gw);
    if (!nh->iface)
    {
      *why = "an interface BIRD does not know (is protocol device configured?)";
      return NULL;
    }
    if (ipa_nonzero(nh->gw))
    {
      neighbor *nbr = neigh_find(&p->p, nh->gw, nh->iface, (nh->flags & RNF_ONLINK) ? NEF_ONLINK : 0);
      if (!nbr || (nbr->scope == SCOPE_HOST))
      {
	*why = "a next hop that is no neighbor";
	return NULL;
      }
    }
    nh = NEXTHOP_NEXT(nh);
  }
  nhad->ad.length = (void *) nh - (void *) nhad->ad.data;
  if (!nexthop_is_sorted(nhad))
    nhad = nexthop_sort(nhad, tmp_linpool);
  return nhad;
}

/* A LEARN add or delete, imported as the kernel protocol imports alien routes. */
void
fibd_learn(struct fibd_proto *p, const struct ps_route *r)
{
  struct channel *c = (r->key.family == PS_FAM_V4) ? p->ip4 : p->ip6;
  ip_addr prefix = fibd_get_addr(r->key.family, &r->key.prefix);
  ea_list *ea = NULL;
  net_addr n;

  if (!c || c->channel_state != CS_UP)
    return;
  if (r->key.family == PS_FAM_V4)
    net_fill_ip4(&n, ipa_to_ip4(prefix), r->key.plen);
  else
    net_fill_ip6(&n, ipa_to_ip6(prefix), r->key.plen);

  if (r->learn_op != PS_LEARN_DELETE)
  {
    switch (r->type)
    {
    case PS_RT_BLACKHOLE:	ea_set_dest(&ea, 0, RTD_BLACKHOLE); break;
    case PS_RT_UNREACHABLE:	ea_set_dest(&ea, 0, RTD_UNREACHABLE); break;
    case PS_RT_PROHIBIT:	ea_set_dest(&ea, 0, RTD_PROHIBIT); break;
    default:
    {
      const char *why = NULL;
      struct nexthop_adata *nhad = fibd_learn_nexthops(p, r, &why);
      if (!nhad)
      {
	p->st.learn_skipped++;
	log_rl(&p->log_tbf, L_WARN "%s: not learning %N: %s", p->p.name, &n, why);
	return;
      }
      ea_set_attr(&ea, EA_LITERAL_DIRECT_ADATA(&ea_gen_nexthop, 0, &nhad->ad));
    }
    }
    ea_set_attr_u32(&ea, &ea_gen_source, 0, RTS_INHERIT);
    ea_set_attr_u32(&ea, &ea_gen_preference, 0, c->preference);
    ea_set_attr_u32(&ea, &ea_krt_source, 0, r->protocol);
    ea_set_attr_u32(&ea, &ea_krt_metric, 0, r->key.metric);
  }

  /* One source per kernel metric, so that deleting one metric keeps the others. */
  struct rte_src *src = rt_get_source(&p->p, r->key.metric);
  if (ea)
  {
    rte e0 = { .attrs = ea, .src = src };
    p->st.learned++;
    rte_update(c, &n, &e0, src);
  }
  else
  {
    p->st.unlearned++;
    rte_update(c, &n, NULL, src);
  }
  rt_unlock_source(src);
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
      rt_refresh_begin(&c->in_req);
      rt_refresh_end(&c->in_req);
    }
  }
}

/* A route refresh of a channel that is up begins (begin) or ends. */
void
fibd_channel_refresh(struct channel *c, int begin)
{
  if (begin)
    rt_refresh_begin(&c->in_req);
  else
    rt_refresh_end(&c->in_req);
}

static void
fibd_refeed_channel(struct channel *c)
{
  if (c && c->channel_state == CS_UP && rt_export_get_state(&c->out_req) != TES_DOWN)
    channel_request_full_refeed(c);
}

/* fibd asks for a full feed (REFEED): feed every channel again. */
void
fibd_refeed(struct fibd_proto *p)
{
  fibd_refeed_channel(p->ip4);
  fibd_refeed_channel(p->ip6);
}

/* The CLI's time format; runs in the main thread (show protocols all). */
void
fibd_format_time(struct fibd_proto *p UNUSED, btime t, byte *buf, uint size)
{
  rcu_read_lock();
  struct timeformat *tf = this_cli->tf ?:
    &atomic_load_explicit(&global_runtime, memory_order_acquire)->tf_proto;
  tm_format_real_time(buf, size, tf->fmt1, t);
  rcu_read_unlock();
}


/*
 *	Protocol glue
 */

/* Runs in the main thread (the config's symbols): the kernel attribute classes, once. */
static void
fibd_find_classes(void)
{
  if (fibd_ea_prefsrc)
    return;
  fibd_ea_prefsrc = ea_class_find_by_name("krt_prefsrc");
  fibd_ea_realm = ea_class_find_by_name("krt_realm");
  fibd_ea_scope = ea_class_find_by_name("krt_scope");
  fibd_ea_mtu = ea_class_find_by_name("krt_mtu");
}

static struct proto *
fibd_init(struct proto_config *CF)
{
  struct proto *P = proto_new(CF);
  struct fibd_proto *p = (void *) P;

  fibd_find_classes();
  fibd_init_common(p, CF);
  P->preexport = fibd_preexport;
  P->rt_notify = fibd_rt_notify;
  P->export_fed = fibd_channel_fed;
  P->sources.class = &fibd_rte_owner_class;
  return P;
}

struct protocol proto_fibd = {
  .name =		"fibd",
  .template =		"fibd%d",
  .startup =		PROTOCOL_STARTUP_CONNECTOR,
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
