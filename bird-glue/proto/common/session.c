/*
 *	BIRD -- fibd protocol: the session, the export and the CLI (the same code
 *	for BIRD 2 and 3)
 *
 *	Can be freely distributed and used under the terms of the GNU GPL.
 */

/*
 * What BIRD 2 and 3 do alike. Where their APIs differ, version.h of each
 * gives a macro (timers, events, the socket's loop, the states) and fibd.c of
 * each the function (route attributes, learn, refeed): see fibd.h.
 */

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>

#include "nest/bird.h"
#include "nest/iface.h"
#include "nest/protocol.h"
#include "nest/route.h"
#include "nest/cli.h"
#include "conf/conf.h"
#include "lib/string.h"
#include "lib/unaligned.h"

#include <proto-shim/msg.h>
#include <proto-shim/enc.h>
#include <proto-shim/dec.h>

#include "proto/fibd/fibd.h"

#define FIBD_BUF_SIZE	65536		/* socket buffers; a message is at most ~8 kB */
#define FIBD_TX_ROUNDS	16		/* socket buffers filled per tx event, at most */
#define FIBD_TX_CHUNK	8192		/* bytes taken off the pending set between looks at the clock */
#define FIBD_STOP_WAIT	(1 S_)		/* BYE gets this long to drain at shutdown */
#define FIBD_COMMIT_WAIT (10 MS_)	/* the first connect, while its commit runs */
/*
 * The pending set's empty chunks (pending.c) go back to the kernel once
 * nothing has been pending nor sent for FIBD_TRIM_WAIT, FIBD_TRIM_STEP chunks
 * (4 MiB, one munmap() each) every FIBD_TRIM_WAIT.
 */
#define FIBD_TRIM_WAIT	(1 S_)
#define FIBD_TRIM_STEP	16

static void fibd_connect(timer *t);
static void fibd_disconnect(struct fibd_proto *p, const char *why);
static void fibd_export_resume(struct fibd_proto *p);
static void fibd_trim_later(struct fibd_proto *p);

/*
 *	The pending set (pending.c)
 */

/* A marker (FEED_BEGIN, FEED_END, BYE): queued in order, never coalesced. */
static void
fibd_queue_mark(struct fibd_proto *p)
{
  p->enc.len = 0;
  if (ps_enc_msg(&p->enc, &p->msg, NULL) < 0)
    bug("fibd: cannot encode %s", ps_msg_type_name(p->msg.type));
  fibd_pending_mark(&p->q, p->enc.data, p->enc.len);
  FIBD_KICK(p);
}

/* Record the encoded change (p->enc) for its key; past the pending limit, drop the session. */
static void
fibd_queue_route(struct fibd_proto *p, u8 fam, u8 plen, const byte *prefix, u32 metric)
{
  if (fibd_pending_route(&p->q, p->cf->pending_limit, fam, plen, prefix, metric,
			 p->enc.data, p->enc.len) < 0 && !p->drop_pending)
  {
    /* Dropped from an event: not from inside the export. */
    log(L_WARN "%s: %u changes wait for fibd, the pending limit; dropping the session",
	p->p.name, p->q.routes);
    p->drop_pending = 1;
    p->st.drops++;
  }
  FIBD_KICK(p);
}


/*
 *	Sending
 */

/* Close the socket (if any) and forget everything of the session. */
static void
fibd_close_session(struct fibd_proto *p)
{
  if (p->sk)
  {
    rfree(p->sk);
    p->sk = NULL;
  }
  p->dec = ps_dec_free(p->dec);
  fibd_pending_flush(&p->q);
  p->feeds_open = 0;
  p->drop_pending = 0;
  p->state = FIBD_S_IDLE;
  fibd_export_resume(p);
}

/* Shutdown: BYE has left (or could not): the protocol is down. */
static void
fibd_stopped(struct fibd_proto *p)
{
  tm_stop(p->stop_timer);
  tm_stop(p->retry_timer);
  tm_stop(p->trim_timer);
  fibd_close_session(p);
  proto_notify_state(&p->p, FIBD_PS_DONE);
}

static u64
fibd_now_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (u64) ts.tv_sec * 1000000000ULL + (u64) ts.tv_nsec;
}

/*
 * Copy whole messages from the head of the queue into the socket's buffer and
 * send them, FIBD_TX_CHUNK bytes at a time, at most FIBD_TX_ROUNDS buffers and
 * FIBD_TX_BUDGET_NS (version.h) per run. The tx hook goes on when a partial
 * write drains, the event when the budget ran out.
 */
static void
fibd_pump(struct fibd_proto *p)
{
  u64 deadline = fibd_now_ns() + FIBD_TX_BUDGET_NS;
  int over = 0;

  for (int round = 0; round < FIBD_TX_ROUNDS && !over; round++)
  {
    sock *sk = p->sk;
    uint len = 0, got;

    if (!sk || !sk_tx_buffer_empty(sk))
      return;
    do
    {
      uint room = MIN(sk->tbsize - len, FIBD_TX_CHUNK);
      got = fibd_pending_take(&p->q, sk->tbuf + len, room);
      if (!got && room < sk->tbsize - len)
	got = fibd_pending_take(&p->q, sk->tbuf + len, sk->tbsize - len); /* a long message */
      len += got;
      over = fibd_now_ns() >= deadline;
    }
    while (got && len < sk->tbsize && !over);
    if (fibd_pending_empty(&p->q))
      fibd_trim_later(p);
    if (!len)
    {
      if (p->state == FIBD_S_STOPPING)
	fibd_stopped(p);
      return;
    }
    p->st.bytes_out += len;
    p->last_sent = current_time();
    int r = sk_send(sk, len);
    if (r < 0)
      return;			/* the error hook ran: p->sk is gone */
    if (r == 0)
      return;			/* the tx hook goes on */
  }
  FIBD_KICK(p);
}

/* Nothing pending: empty chunks go back from FIBD_TRIM_WAIT on, unless changes come first. */
static void
fibd_trim_later(struct fibd_proto *p)
{
  if (fibd_pending_excess(&p->q) && !tm_active(p->trim_timer))
    FIBD_TM_START(p, p->trim_timer, FIBD_TRIM_WAIT);
}

static void
fibd_trim(timer *t)
{
  struct fibd_proto *p = t->data;
  btime quiet = current_time() - p->last_sent;

  /* Changes again: they take the chunks; the pump calls again once it has sent them. */
  if (!fibd_pending_empty(&p->q))
    return;
  /* Sent within the wait: changes come and go (churn), and would map chunks again. */
  if (quiet < FIBD_TRIM_WAIT)
  {
    FIBD_TM_START(p, t, FIBD_TRIM_WAIT - quiet);
    return;
  }
  if (fibd_pending_trim(&p->q, FIBD_TRIM_STEP))
    FIBD_TM_START(p, t, FIBD_TRIM_WAIT);
}

/*
 * Whether to skip an export (BIRD 3) or feed (BIRD 2) run: the pending set is
 * at the high-water mark and fibd reads it, and BIRD is not corked. The
 * changes wait in BIRD's table meanwhile; fibd_export_resume runs the
 * skipped events again. A run at the mark that goes all the same is counted
 * with its reason (per run, where export_pauses counts pauses), so that a
 * pending set far past the mark is explained.
 */
static int
fibd_export_pause(struct fibd_proto *p)
{
  if (p->state != FIBD_S_UP || p->q.routes < FIBD_EXPORT_HIGH)
    return 0;
  if (fibd_export_corked())
  {
    p->st.export_corked++;
    return 0;
  }
  if (current_time() - p->last_sent >= FIBD_EXPORT_STALL)
  {
    p->st.export_unread++;
    return 0;
  }
  if (!p->export_paused)
    p->st.export_pauses++;
  return 1;
}

/*
 * A channel's export (BIRD 3) or feed (BIRD 2) event, as the glue wraps it.
 * export_paused has a bit per channel whose run was skipped: a run that goes
 * (fibd stalled, BIRD corked) clears its channel's, not the other's.
 */
void
fibd_export_event(void *data)
{
  struct channel *c = data;
  struct fibd_proto *p = (void *) c->proto;
  u8 bit = 1 << (c == p->ip6);

  if (fibd_export_pause(p))
  {
    p->export_paused |= bit;
    return;
  }
  p->export_paused &= ~bit;
  p->export_hook[c == p->ip6](c);
}

/* Run again the events fibd_export_event skipped. */
static void
fibd_export_resume(struct fibd_proto *p)
{
  u8 paused = p->export_paused;

  p->export_paused = 0;
  if (p->ip4 && (paused & 1))
    fibd_channel_resume(p->ip4);
  if (p->ip6 && (paused & 2))
    fibd_channel_resume(p->ip6);
}

/* The pump, then export again if it stopped at the high-water mark and fibd has read enough. */
static void
fibd_pump_resume(struct fibd_proto *p)
{
  fibd_pump(p);
  if (p->export_paused && p->q.routes <= FIBD_EXPORT_LOW)
    fibd_export_resume(p);
}

static void
fibd_send_tx(void *data)
{
  struct fibd_proto *p = data;

  if (p->drop_pending)
  {
    p->drop_pending = 0;
    if (p->sk)
      fibd_disconnect(p, "too many changes pending");
    return;
  }
  fibd_pump_resume(p);
}

static void
fibd_tx_hook(sock *sk)
{
  fibd_pump_resume(sk->data);
}


/*
 *	Encoding routes
 */

void
fibd_key(struct fibd_proto *p, const net_addr *n, u32 metric, struct ps_key *k)
{
  memset(k, 0, sizeof(*k));
  k->family = n->type == NET_IP4 ? PS_FAM_V4 : PS_FAM_V6;
  k->plen = net_pxlen(n);
  fibd_put_addr(net_prefix(n), k->prefix.b);
  if (!p->cf->metric)
  {
    k->has |= PS_KEY_METRIC;
    k->metric = metric;
  }
}

/*
 * The route as fibd's ROUTE message, in parts that both BIRDs fill from their
 * own route attributes (fibd.c's fibd_fill_route): the key and the type, each
 * next hop, the kernel protocol's attributes. Each part returns NULL, or why
 * fibd's protocol cannot carry the route.
 */
struct ps_route *
fibd_route_begin(struct fibd_proto *p, const net_addr *n, u32 metric, int dest, const char **why)
{
  struct ps_route *r = &p->msg.u.route;

  p->msg.type = PS_ROUTE;
  memset(r, 0, offsetof(struct ps_route, nh));
  fibd_key(p, n, metric, &r->key);
  *why = NULL;
  switch (dest)
  {
  case RTD_UNICAST:	r->type = PS_RT_UNICAST; break;
  case RTD_BLACKHOLE:	r->type = PS_RT_BLACKHOLE; break;
  case RTD_UNREACHABLE:	r->type = PS_RT_UNREACHABLE; break;
  case RTD_PROHIBIT:	r->type = PS_RT_PROHIBIT; break;
  default:		*why = "not a kernel route type";
  }
  return r;
}

const char *
fibd_route_nexthop(struct ps_route *r, const struct nexthop *nh)
{
  struct ps_nexthop *x;

  if (r->n_nexthops == PS_NEXTHOPS_MAX)
    return "more than 256 next hops";
  if (nh->labels)
    return "MPLS labels are not supported";
  x = &r->nh[r->n_nexthops++];
  memset(x, 0, sizeof(*x));
  if (ipa_nonzero(nh->gw))
    x->gw_family = fibd_put_addr(nh->gw, x->gw.b);
  if (nh->iface)
    bsnprintf(x->ifname, sizeof(x->ifname), "%s", nh->iface->name);
  x->weight = nh->weight + 1;
  x->flags = (nh->flags & RNF_ONLINK) ? PS_NH_ONLINK : 0;
  return NULL;
}

/* krt_prefsrc, krt_realm, krt_scope and krt_mtu, each NULL when the route has none. */
const char *
fibd_route_krt(struct ps_route *r, const eattr *prefsrc, const eattr *realm, const eattr *scope,
	       const eattr *mtu)
{
  if (prefsrc)
  {
    ip_addr src = *(const ip_addr *) prefsrc->u.ptr->data;
    if ((r->key.family == PS_FAM_V4) != ipa_is_ip4(src))
      return "krt_prefsrc of the other address family";
    fibd_put_addr(src, r->prefsrc.b);
    r->has |= PS_RA_PREFSRC;
  }
  if (realm)
  {
    r->realm = realm->u.data;
    r->has |= PS_RA_REALM;
  }
  if (scope)
  {
    r->scope = scope->u.data;
    r->has |= PS_RA_SCOPE;
  }
  if (mtu)
  {
    r->mtu = mtu->u.data;
    r->has |= PS_RA_MTU;
  }
  return NULL;
}

static void
fibd_encode_withdraw(struct fibd_proto *p, const net_addr *n, u32 metric)
{
  p->msg.type = PS_WITHDRAW;
  fibd_key(p, n, metric, &p->msg.u.withdraw);
  p->enc.len = 0;
  if (ps_enc_msg(&p->enc, &p->msg, NULL) < 0)
    bug("fibd: cannot encode a withdraw of %N", n);
}

/*
 * The kernel key's metric: the configured one, or (metric 0) the route's
 * krt_metric, which an export filter may set. A withdraw gets the table's
 * route before the filter, so in that mode the metric each prefix went with is
 * remembered: only when it is not 0, as no entry means 0. Routes without a
 * krt_metric, the usual case, so cost no entry, and a full feed no growth (a
 * fib of 750,000 entries took 30 MiB of BIRD's memory, and each rehash held
 * BIRD 2's loop for 3 to 7 ms).
 */
static u32
fibd_route_metric(struct fibd_proto *p, const net_addr *n, const rte *new)
{
  struct fib *f = n->type == NET_IP4 ? &p->metrics4 : &p->metrics6;
  struct fibd_metric *m;

  if (p->cf->metric)
    return p->cf->metric;
  if (new)
    return fibd_krt_metric(new);
  m = fib_find(f, n);
  return m ? m->metric : 0;
}

static void
fibd_remember_metric(struct fibd_proto *p, const net_addr *n, int sent, u32 metric)
{
  struct fib *f = n->type == NET_IP4 ? &p->metrics4 : &p->metrics6;
  struct fibd_metric *m;

  if (p->cf->metric)
    return;
  if (sent && metric)
  {
    m = fib_get(f, n);
    m->metric = metric;
  }
  else if (m = fib_find(f, n))
    fib_delete(f, m);
}

/* A route exported (new), or withdrawn (new NULL); had_old: it replaces one. */
void
fibd_notify(struct fibd_proto *p, const net_addr *n, const rte *new, int had_old)
{
  byte prefix[16] = { 0 };
  u8 fam = n->type == NET_IP4 ? PS_FAM_V4 : PS_FAM_V6;
  u32 metric, old_metric;
  struct ps_fault fault;

  /* BIRD's own shutdown withdraws everything: fibd hears of it from BYE. */
  if (FIBD_SHUTTING_DOWN || p->state != FIBD_S_UP || p->drop_pending)
    return;
  fibd_put_addr(net_prefix(n), prefix);
  metric = fibd_route_metric(p, n, new);
  fibd_pending_prefetch(&p->q, fam, net_pxlen(n), prefix, metric);

  /* With per-route metrics (metric 0), a new metric is a new kernel key. */
  if (new && had_old && !p->cf->metric && (old_metric = fibd_route_metric(p, n, NULL)) != metric)
  {
    fibd_encode_withdraw(p, n, old_metric);
    p->st.withdraws_sent++;
    fibd_queue_route(p, fam, net_pxlen(n), prefix, old_metric);
  }

  if (new)
  {
    const char *why = fibd_fill_route(p, n, new, metric);
    p->enc.len = 0;
    if (!why && ps_enc_msg(&p->enc, &p->msg, &fault) < 0)
      why = fault.text;
    if (!why)
    {
      p->st.routes_sent++;
      fibd_remember_metric(p, n, 1, metric);
      fibd_queue_route(p, fam, net_pxlen(n), prefix, metric);
      return;
    }
    /* Not carried: make sure no older version of it stays in the kernel. */
    p->st.encode_errors++;
    log_rl(&p->log_tbf, L_WARN "%s: %N cannot go to fibd (%s); withdrawn instead",
	   p->p.name, n, why);
  }
  fibd_encode_withdraw(p, n, metric);
  p->st.withdraws_sent++;
  fibd_remember_metric(p, n, 0, 0);
  fibd_queue_route(p, fam, net_pxlen(n), prefix, metric);
}

/* A channel's feed is over; after the first one of each channel since WELCOME, FEED_END. */
void
fibd_channel_fed(struct channel *c)
{
  struct fibd_proto *p = (void *) c->proto;
  uint bit = (c == p->ip4) ? 1 : 2;

  if (!(p->feeds_open & bit) || p->state != FIBD_S_UP)
    return;
  p->feeds_open &= ~bit;
  if (p->feeds_open)
    return;
  p->msg.type = PS_FEED_END;
  p->msg.u.generation = p->generation;
  fibd_queue_mark(p);
  p->feed_ended = current_time();
  p->feed_routes = p->st.routes_sent - p->feed_routes;
  log(L_INFO "%s: full feed queued for fibd (%lu routes)", p->p.name, p->feed_routes);
}


/*
 *	Receiving
 */

/*
 * A learn dump of our table begins or has ended (LEARN_REFRESH): BIRD's own
 * route refresh of the family's channel, so that learned routes fibd did not
 * send again (their deletes were lost to fibd's monitor) go at the end. A
 * begin while one is open is a dump taken again: the refresh goes on. An end
 * without a begin (fibd began it before this session) ends nothing. Nor does
 * a refresh before anything was learned in this session (the first learn dump
 * after connecting): in BIRD 2 its begin and its end each walk the whole table.
 */
static void
fibd_got_refresh(struct fibd_proto *p, const struct ps_refresh *x)
{
  u8 bit = (x->family == PS_FAM_V4) ? 1 : 2;
  struct channel *c = (x->family == PS_FAM_V4) ? p->ip4 : p->ip6;

  if (x->table != p->cf->table || !c || c->channel_state != CS_UP)
    return;
  if (x->phase == PS_REFRESH_BEGIN)
  {
    if ((p->learn_refreshing & bit) || !(p->learned_any & bit))
      return;
    p->learn_refreshing |= bit;
    fibd_channel_refresh(c, 1);
  }
  else if (p->learn_refreshing & bit)
  {
    p->learn_refreshing &= ~bit;
    p->st.learn_refreshes++;
    fibd_channel_refresh(c, 0);
  }
}

/*
 * Results: we ask for failures only, so a full feed costs BIRD no decoding
 * of a result per route; installed and removed ones come as the session's
 * counts so far.
 */
static void
fibd_got_status(struct fibd_proto *p, const struct ps_status *s)
{
  if (s->has & PS_STATUS_COUNTS)
  {
    p->st.installed += s->installed - MIN(s->installed, p->sess_installed);
    p->st.removed += s->removed - MIN(s->removed, p->sess_removed);
    p->sess_installed = s->installed;
    p->sess_removed = s->removed;
  }
  for (uint i = 0; i < s->n; i++)
  {
    const struct ps_status_entry *r = &s->e[i];
    const char *what;

    switch (r->state)
    {
    case PS_RS_INSTALLED: p->st.installed++; continue;
    case PS_RS_REMOVED:   p->st.removed++; continue;
    case PS_RS_FAILED:    p->st.failed++; what = "failed"; break;
    case PS_RS_WAITING:   p->st.waiting++; what = "waits for its next hop"; break;
    case PS_RS_REJECTED:  p->st.rejected++; what = "was rejected"; break;
    default: continue;
    }
    ip_addr a = (r->key.family == PS_FAM_V4) ? ipa_from_ip4(get_ip4(r->key.prefix.b))
					      : ipa_from_ip6(get_ip6(r->key.prefix.b));
    log_rl(&p->log_tbf, L_WARN "%s: %I/%u table %u metric %u %s: %s%s%.*s", p->p.name,
	   a, r->key.plen, r->key.table, r->key.metric, what, strerror(r->error),
	   r->text.len ? ": " : "", (int) MIN(r->text.len, 200), r->text.ptr);
  }
}


/* WELCOME: export starts with a full feed of a new generation. */
static void
fibd_welcome(struct fibd_proto *p, const struct ps_welcome *w)
{
  bsnprintf(p->server_id, sizeof(p->server_id), "%s", w->server_id);
  p->version = w->version;
  p->boot_epoch = w->boot_epoch;
  p->since = current_real_time();
  p->state = FIBD_S_UP;
  p->retry = FIBD_RETRY_MIN;
  p->st.connects++;
  p->sess_installed = p->sess_removed = 0;
  log(L_INFO "%s: connected to %s", p->p.name, p->server_id);

  p->generation = (u64) current_real_time();
  p->feeds_open = (p->ip4 ? 1 : 0) | (p->ip6 ? 2 : 0);
  p->feed_started = current_time();
  p->feed_ended = 0;
  p->feed_routes = p->st.routes_sent;
  p->msg.type = PS_FEED_BEGIN;
  p->msg.u.generation = p->generation;
  fibd_queue_mark(p);
  proto_notify_state(&p->p, PS_UP);
}

static int
fibd_rx_hook(sock *sk, uint size)
{
  struct fibd_proto *p = sk->data;
  const struct ps_msg *m;
  uint off = 0;
  int r;

  while (off < size)
  {
    r = ps_dec_feed(p->dec, sk->rbuf + off, size - off);
    if (r < 0)
      goto bad;
    off += r;
    while ((r = ps_dec_next(p->dec, &m)) == 1)
    {
      switch (m->type)
      {
      case PS_WELCOME:
	if (p->state != FIBD_S_HELLO)
	  goto state;
	fibd_welcome(p, &m->u.welcome);
	break;
      case PS_ERROR:
	bsnprintf(p->last_error, sizeof(p->last_error), "%s%s%s: %.*s",
		  ps_err_name(m->u.error.code) ?: "?", m->u.error.field[0] ? " " : "",
		  m->u.error.field, (int) MIN(m->u.error.text.len, 100), m->u.error.text.ptr);
	log(L_ERR "%s: fibd refused the session: %s", p->p.name, p->last_error);
	fibd_disconnect(p, "fibd sent an error");
	return 0;
      case PS_ROUTE_STATUS:
	fibd_got_status(p, &m->u.status);
	break;
      case PS_REFEED:
	/* Sent after WELCOME to a name fibd knows nothing of: our feed is under way. */
	if (!p->feeds_open && p->state == FIBD_S_UP)
	{
	  log(L_INFO "%s: fibd asks for a full feed", p->p.name);
	  fibd_refeed(p);
	}
	break;
      case PS_LEARN:
	if (p->cf->learn && p->state == FIBD_S_UP)
	{
	  if (m->u.route.learn_op == PS_LEARN_ADD)
	    p->learned_any |= (m->u.route.key.family == PS_FAM_V4) ? 1 : 2;
	  fibd_learn(p, &m->u.route);
	}
	break;
      case PS_LEARN_REFRESH:
	if (p->cf->learn && p->state == FIBD_S_UP)
	  fibd_got_refresh(p, &m->u.refresh);
	break;
      default:
	break;			/* PONG: nothing asked for yet */
      }
      if (!p->sk)
	return 0;		/* disconnected meanwhile */
    }
    if (r < 0)
      goto bad;
  }
  return 1;

bad:
  log(L_ERR "%s: bad message from fibd: %s", p->p.name,
      ps_dec_fault(p->dec) ? ps_dec_fault(p->dec)->text : "decoder failure");
  fibd_disconnect(p, "bad message");
  return 0;

state:
  log(L_ERR "%s: unexpected %s from fibd", p->p.name, ps_msg_type_name(m->type) ?: "message");
  fibd_disconnect(p, "protocol error");
  return 0;
}

static void
fibd_err_hook(sock *sk, int err)
{
  struct fibd_proto *p = sk->data;

  if (p->state == FIBD_S_STOPPING)
  {
    fibd_stopped(p);
    return;
  }
  if (err)
    log(L_WARN "%s: connection to fibd failed: %M", p->p.name, err);
  else
    log(L_WARN "%s: fibd closed the connection", p->p.name);
  fibd_disconnect(p, NULL);
}


/*
 *	Connecting
 */

static void
fibd_retry_later(struct fibd_proto *p)
{
  FIBD_TM_START(p, p->retry_timer, p->retry);
  p->retry = MIN(p->retry * 2, FIBD_RETRY_MAX);
}

/* The session is over: pause export (BIRD sends nothing meanwhile), try again later. */
static void
fibd_disconnect(struct fibd_proto *p, const char *why)
{
  /* Stopping: the session is over either way; no reconnect. */
  if (p->state == FIBD_S_STOPPING)
  {
    fibd_stopped(p);
    return;
  }
  if (why)
    log(L_WARN "%s: disconnecting from fibd: %s", p->p.name, why);
  fibd_close_session(p);
  fibd_trim_later(p);			/* the backlog's chunks */
  p->st.disconnects++;
  fibd_unlearn_all(p);
  p->learn_refreshing = p->learned_any = 0;
  if (p->p.proto_state == PS_UP)
    proto_notify_state(&p->p, PS_START);
  fibd_retry_later(p);
}

static int
fibd_send_hello(struct fibd_proto *p)
{
  struct ps_hello *h = &p->msg.u.hello;
  struct ps_fault fault;

  memset(&p->msg, 0, offsetof(struct ps_msg, u) + sizeof(*h));
  p->msg.type = PS_HELLO;
  h->n_versions = 1;
  h->versions[0] = PS_VERSION_MAX;
  h->role = PS_ROLE_FEED;
  bsnprintf(h->name, sizeof(h->name), "bird:%s", p->p.name);
  h->has = PS_HELLO_TABLE | PS_HELLO_METRIC | PS_HELLO_FAMILIES | PS_HELLO_STALE | PS_HELLO_PERSIST;
  h->table = p->cf->table;
  h->metric = p->cf->metric;
  h->families = (p->ip4 ? PS_HELLO_FAM_V4 : 0) | (p->ip6 ? PS_HELLO_FAM_V6 : 0);
  h->stale_time = p->cf->stale_time;
  h->persist = p->cf->persist;
  if (p->cf->learn)
  {
    h->has |= PS_HELLO_LEARN | PS_HELLO_REFRESH;
    h->learn = 1;
    h->refresh = 1;
  }
  p->learn_refreshing = p->learned_any = 0;
  h->has |= PS_HELLO_RESULTS;
  h->results = PS_RESULTS_FAILURES;
  p->enc.len = 0;
  if (ps_enc_msg(&p->enc, &p->msg, &fault) < 0)
  {
    log(L_ERR "%s: cannot encode HELLO: %s", p->p.name, fault.text);
    return -1;
  }
  memcpy(p->sk->tbuf, p->enc.data, p->enc.len);
  return sk_send(p->sk, p->enc.len) < 0 ? -1 : 0;
}

static void
fibd_connect(timer *t)
{
  struct fibd_proto *p = t->data;
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  int fd;
  sock *sk;

  /* Only while starting: a timer left over from a stop must not connect again. */
  if (p->p.proto_state != PS_START)
    return;
  /* Nor before the commit that started it has returned (version.h): the feed
   * would miss routes that protocols starting after this one import in it. */
  if (FIBD_COMMIT_PENDING(p))
  {
    FIBD_TM_START(p, t, FIBD_COMMIT_WAIT);
    return;
  }
  if (strlen(p->cf->socket) >= sizeof(sa.sun_path))
  {
    log(L_ERR "%s: socket path %s is too long", p->p.name, p->cf->socket);
    return;
  }
  strcpy(sa.sun_path, p->cf->socket);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
  {
    log(L_ERR "%s: socket: %m", p->p.name);
    fibd_retry_later(p);
    return;
  }
  /* A Unix connect completes or fails at once: absent, refused, or backlog full. */
  if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
  {
    if (p->retry == FIBD_RETRY_MIN || p->retry == FIBD_RETRY_MAX)
      log(L_INFO "%s: cannot reach fibd at %s: %m; retrying", p->p.name, p->cf->socket);
    close(fd);
    fibd_retry_later(p);
    return;
  }

  sk = sk_new(p->p.pool);
  sk->type = SK_MAGIC;
  sk->fd = fd;
  sk->data = p;
  sk->rx_hook = fibd_rx_hook;
  sk->tx_hook = fibd_tx_hook;
  sk->err_hook = fibd_err_hook;
  sk->rbsize = sk->tbsize = FIBD_BUF_SIZE;
  if (FIBD_SK_OPEN(p, sk) < 0)
  {
    log(L_ERR "%s: cannot add the socket: %s", p->p.name, sk->err ?: "?");
    rfree(sk);
    fibd_retry_later(p);
    return;
  }
  sk->type = SK_UNIX;
  sk_reallocate(sk);
  p->sk = sk;
  p->dec = ps_dec_new(0);
  p->state = FIBD_S_HELLO;
  if (!p->dec || fibd_send_hello(p) < 0)
  {
    if (p->sk)
      fibd_disconnect(p, "cannot send HELLO");
  }
}


/*
 *	Protocol glue
 */

static void
fibd_stop_timeout(timer *t)
{
  struct fibd_proto *p = t->data;

  log(L_WARN "%s: BYE did not drain in time", p->p.name);
  fibd_stopped(p);
}

void
fibd_postconfig(struct proto_config *CF)
{
  struct fibd_config *cf = (void *) CF;
  struct channel_config *ip4 = proto_cf_find_channel(CF, NET_IP4);
  struct channel_config *ip6 = proto_cf_find_channel(CF, NET_IP6);

  if (cf->c.class == SYM_TEMPLATE)
    return;
  if (!ip4 && !ip6)
    cf_error("An ipv4 or ipv6 channel is needed");
  CF->net_type = ip4 ? NET_IP4 : NET_IP6;
  if (cf->merge_paths)
  {
    if (ip4) { ip4->ra_mode = RA_MERGED; ip4->merge_limit = cf->merge_paths; }
    if (ip6) { ip6->ra_mode = RA_MERGED; ip6->merge_limit = cf->merge_paths; }
  }
}

/*
 * What init sets up in both BIRDs; the caller adds its own hooks. The CLI may
 * ask for the config before the first start.
 */
void
fibd_init_common(struct fibd_proto *p, struct proto_config *CF)
{
  struct proto *P = &p->p;

  p->cf = (void *) CF;
  proto_configure_channel(P, &p->ip4, proto_cf_find_channel(CF, NET_IP4));
  proto_configure_channel(P, &p->ip6, proto_cf_find_channel(CF, NET_IP6));
  P->main_channel = p->ip4 ?: p->ip6;
  ps_buf_init(&p->enc);
}

/*
 * A new run: the pending set, the timers and the event, the metrics; then the
 * first connect. After a graceful restart, export waits until the other
 * protocols converged.
 */
int
fibd_start(struct proto *P)
{
  struct fibd_proto *p = (void *) P;

  p->cf = (void *) P->cf;
  fibd_pending_init(&p->q, P->pool);
  p->retry_timer = tm_new_init(P->pool, fibd_connect, p, 0, 0);
  p->stop_timer = tm_new_init(P->pool, fibd_stop_timeout, p, 0, 0);
  p->trim_timer = tm_new_init(P->pool, fibd_trim, p, 0, 0);
  p->tx_event = ev_new_init(P->pool, fibd_send_tx, p);
  p->retry = FIBD_RETRY_MIN;
  p->log_tbf = (struct tbf) TBF_DEFAULT_LOG_LIMITS;
  p->state = FIBD_S_IDLE;
  p->sk = NULL;
  p->dec = NULL;
  p->drop_pending = 0;
  p->export_paused = 0;
  memset(&p->st, 0, sizeof(p->st));
  fib_init(&p->metrics4, P->pool, NET_IP4, sizeof(struct fibd_metric),
	   OFFSETOF(struct fibd_metric, n), 0, NULL);
  fib_init(&p->metrics6, P->pool, NET_IP6, sizeof(struct fibd_metric),
	   OFFSETOF(struct fibd_metric, n), 0, NULL);
  if (P->gr_recovery && p->cf->graceful_restart)
  {
    if (p->ip4) p->ip4->gr_wait = 1;
    if (p->ip6) p->ip6->gr_wait = 1;
  }
  FIBD_AFTER_COMMIT(p);
  FIBD_TM_START(p, p->retry_timer, 0);
  return PS_START;
}

void
fibd_cleanup(struct proto *P)
{
  struct fibd_proto *p = (void *) P;

  fibd_pending_free(&p->q);
  ps_buf_release(&p->enc);
}

int
fibd_shutdown(struct proto *P)
{
  struct fibd_proto *p = (void *) P;
  int keep = p->cf->persist || P->down_code == PDC_CMD_GR_DOWN ||
    P->down_code == PDC_CF_RESTART || P->down_code == PDC_CMD_RESTART;

  tm_stop(p->retry_timer);
  if (!p->sk || p->state != FIBD_S_UP)
  {
    fibd_close_session(p);
    return FIBD_PS_DONE;
  }

  /* What is still pending goes nowhere: a flush withdraws all, a keep waits for the next feed. */
  fibd_pending_flush(&p->q);
  p->drop_pending = 0;			/* or the tx event would drop the session, not send BYE */
  log(L_INFO "%s: %s", p->p.name, keep ? "fibd keeps our routes" : "fibd withdraws our routes");
  p->msg.type = PS_BYE;
  p->msg.u.bye_flags = keep ? 0 : PS_BYE_FLUSH;
  fibd_queue_mark(p);
  p->state = FIBD_S_STOPPING;
  FIBD_TM_START(p, p->stop_timer, FIBD_STOP_WAIT);
  return PS_STOP;
}

int
fibd_reconfigure(struct proto *P, struct proto_config *CF)
{
  struct fibd_proto *p = (void *) P;
  struct fibd_config *o = p->cf, *n = (void *) CF;

  /* What fibd was told in HELLO, or how routes are keyed: a new session. */
  if (strcmp(o->socket, n->socket) || o->table != n->table || o->metric != n->metric ||
      o->merge_paths != n->merge_paths || o->learn != n->learn || o->persist != n->persist ||
      o->stale_time != n->stale_time)
    return 0;
  if (!proto_configure_channel(P, &p->ip4, proto_cf_find_channel(CF, NET_IP4)) ||
      !proto_configure_channel(P, &p->ip6, proto_cf_find_channel(CF, NET_IP6)))
    return 0;
  p->cf = n;
  return 1;
}

void
fibd_copy_config(struct proto_config *dest UNUSED, struct proto_config *src UNUSED)
{
  /* Nothing to deep-copy: the socket path lives in the config's memory. */
}

static const char *
fibd_state_name(struct fibd_proto *p)
{
  switch (p->state)
  {
  case FIBD_S_IDLE:	return "connecting";
  case FIBD_S_HELLO:	return "hello sent";
  case FIBD_S_UP:	return p->feeds_open ? "feeding" : "connected";
  case FIBD_S_STOPPING:	return "stopping";
  default:		return "?";
  }
}

void
fibd_get_status(struct proto *P, byte *buf)
{
  struct fibd_proto *p = (void *) P;

  if (FIBD_PS_IS_DOWN(P))
    return;
  bsprintf(buf, "%s", fibd_state_name(p));
}

void
fibd_show_proto_info(struct proto *P)
{
  struct fibd_proto *p = (void *) P;
  byte tbuf[TM_DATETIME_BUFFER_SIZE];

  cli_msg(-1006, "  fibd socket:      %s", p->cf->socket);
  if (FIBD_PS_IS_DOWN(P))
  {
    cli_msg(-1006, "  Session:          down");
    return;
  }
  cli_msg(-1006, "  Session:          %s", fibd_state_name(p));
  if (p->state == FIBD_S_UP || p->state == FIBD_S_STOPPING)
  {
    fibd_format_time(p, p->since, tbuf, sizeof(tbuf));
    cli_msg(-1006, "  fibd:             %s, protocol version %u, since %s",
	    p->server_id, p->version, tbuf);
  }
  cli_msg(-1006, "  Kernel table:     %u, metric %u%s", p->cf->table, p->cf->metric,
	  p->cf->metric ? "" : " (krt_metric)");
  cli_msg(-1006, "  Routes sent:      %lu, withdraws %lu, coalesced %lu",
	  p->st.routes_sent, p->st.withdraws_sent, p->q.coalesced);
  cli_msg(-1006, "  Pending:          %u changes, %lu bytes; peak %u changes, %lu KiB",
	  p->q.routes, p->q.bytes, p->q.peak, p->q.peak_mem >> 10);
  cli_msg(-1006, "  Entry chunks:     %u mapped, %u kept empty; peak %u (%u KiB each)",
	  p->q.chunks, p->q.n_kept, p->q.peak_chunks, FIBD_CHUNK >> 10);
  cli_msg(-1006, "  Kernel results:   %lu installed, %lu removed, %lu failed, %lu waiting, %lu rejected",
	  p->st.installed, p->st.removed, p->st.failed, p->st.waiting, p->st.rejected);
  if (p->st.encode_errors)
    cli_msg(-1006, "  Not sendable:     %lu", p->st.encode_errors);
  if (p->cf->learn)
    cli_msg(-1006, "  Learned:          %lu adds, %lu deletes, %lu not importable, %lu refreshes",
	    p->st.learned, p->st.unlearned, p->st.learn_skipped, p->st.learn_refreshes);
  cli_msg(-1006, "  Sessions:         %lu connects, %lu disconnects, %lu dropped at the pending limit",
	  p->st.connects, p->st.disconnects, p->st.drops);
  if (p->st.export_pauses)
    cli_msg(-1006, "  Export paused:    %lu times at %u pending changes%s", p->st.export_pauses,
	    FIBD_EXPORT_HIGH, p->export_paused ? ", now" : "");
  if (p->st.export_corked || p->st.export_unread)
    cli_msg(-1006, "  Export past mark: %lu runs while BIRD was corked, %lu while the socket took nothing for 1 s",
	    p->st.export_corked, p->st.export_unread);
  if (p->feed_ended)
    cli_msg(-1006, "  Last full feed:   %lu routes queued in %t s, %t s ago", p->feed_routes,
	    p->feed_ended - p->feed_started, current_time() - p->feed_ended);
  else if (p->state == FIBD_S_UP)
    cli_msg(-1006, "  Full feed:        under way, %t s", current_time() - p->feed_started);
  if (p->last_error[0])
    cli_msg(-1006, "  Last error:       %s", p->last_error);
  if (p->ip4)
    channel_show_info(p->ip4);
  if (p->ip6)
    channel_show_info(p->ip6);
}

