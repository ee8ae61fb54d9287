/*
 * nl: the netlink writer (kernel I/O layer; see docs/design.md).
 *
 * Write path. Routes wait on one FIFO write queue (intrusive, through qnext;
 * R_QUEUED says a route is on it, so it is there at most once). The writer runs
 * from an idle handle while there is work and room in the window: it pops routes,
 * builds RTM_NEWROUTE or RTM_DELROUTE for each from the route's current `want`,
 * appends them to one batch buffer and sends the batch in one send(). Each
 * message carries its own sequence number; the ring of messages in flight is
 * in sequence order, and so are the kernel's answers on this socket. Only a
 * batch's last message asks for an ACK (NLM_F_ACK); the kernel answers the
 * others only if they fail, so the ACK settles them (nl_send.c's ask_acks).
 *
 * A route is in flight at most once (R_INFLIGHT). A change made meanwhile only
 * updates `want`; when the ACK arrives and want differs from what was sent, the
 * route goes back on the queue. So ten changes cost at most two writes.
 *
 * Adds use NLM_F_CREATE with NLM_F_REPLACE for routes fibd installed itself, and
 * NLM_F_EXCL for a key fibd has not installed (R_EXCL), so that a foreign route
 * with the same key is never overwritten: that add fails with EEXIST. Deletes
 * name fibd's rtm_protocol, so the kernel never deletes a foreign route for us;
 * a delete of a route that is already gone (ESRCH) counts as done.
 *
 * Outcomes: success sets `have`; ENETUNREACH, ENODEV, ENETDOWN and EHOSTUNREACH
 * park the route as WAITING until a link or address changes (nl_links_changed);
 * other errors park it as FAILED and retry with backoff (1 s doubling to 60 s).
 * Parked routes sit in a vector (R_PARKED keeps them alive). A batch the kernel
 * refuses as a whole (send fails with anything but EAGAIN or ENOBUFS) fails
 * each of its routes with that error, as if each had been refused.
 *
 * Messages are built by kmsg.c; nothing here knows sessions, control or sync:
 * what the writer needs to ask or tell goes through struct nl_hooks.
 *
 * Ownership: nl holds no route it did not get from nl_enqueue, and releases none;
 * the done hook decides.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>

#include "health.h"
#include "kmsg.h"
#include "log.h"
#include "nl.h"

#include "nl-internal.h"

struct nl_state nl;

/* The writer socket's I/O; tests put a fake kernel here (nl_set_io). */
static ssize_t
real_send(const void *buf, size_t len)
{
	return mnl_socket_sendto(nl.wr, buf, len);
}

static int
real_recvmmsg(struct mmsghdr *msgs, unsigned n)
{
	return recvmmsg(mnl_socket_get_fd(nl.wr), msgs, n, MSG_DONTWAIT, NULL);
}

nl_send_fn nl_io_send = real_send;
nl_recvmmsg_fn nl_io_recvmmsg = real_recvmmsg;

void
nl_set_io(nl_send_fn send_fn, nl_recvmmsg_fn recvmmsg_fn)
{
	nl_io_send = send_fn ? send_fn : real_send;
	nl_io_recvmmsg = recvmmsg_fn ? recvmmsg_fn : real_recvmmsg;
}

static void nl_on_retry(uv_timer_t *h);

/*
 * Kernel messages are few distinct strings: keep one copy of each, and give
 * routes a small index (1-based; 0 is no text).
 */
uint8_t
nl_intern_text(const char *s)
{
	char *copy;

	if (!s || !*s)
		return 0;
	for (unsigned i = 0; i < nl.n_texts; i++)
		if (!strcmp(nl.texts[i], s))
			return (uint8_t)(i + 1);
	if (nl.n_texts >= NL_TEXT_INTERN_MAX || !(copy = strdup(s)))
		return 0;
	nl.texts[nl.n_texts++] = copy;
	return (uint8_t)nl.n_texts;
}

const char *
nl_text(uint16_t idx)
{
	return idx && idx <= nl.n_texts ? nl.texts[idx - 1] : NULL;
}

/* ---- route flags, keeping the table's counters right ---- */

void
nl_set_state(struct route *r, uint8_t flag, bool on)
{
	struct rtable *t = table_at(r->rt);
	bool was = r->flags & flag;

	if (was == on)
		return;
	r->flags = on ? (uint8_t)(r->flags | flag) : (uint8_t)(r->flags & ~flag);
	if (flag == R_FAILED)
		t->n_failed += on ? 1 : (uint64_t)-1;
	else if (flag == R_WAITING)
		t->n_waiting += on ? 1 : (uint64_t)-1;
}

void
nl_set_have(struct route *r, struct rattr *a)
{
	struct rtable *t = table_at(r->rt);

	if (!r->have && a)
		t->n_installed++;
	else if (r->have && !a)
		t->n_installed--;
	route_set_have(r, a);
}

/* A route counts as pending in its table while queued or in flight. */
void
nl_pending_update(struct route *r, uint8_t before)
{
	bool was = before & (R_QUEUED | R_INFLIGHT), is = r->flags & (R_QUEUED | R_INFLIGHT);

	if (was != is)
		table_at(r->rt)->n_pending += is ? 1 : (uint64_t)-1;
}

/* r is sent (on), or the kernel answered for it: counted in its table's in flight too. */
void
nl_set_inflight(struct route *r, bool on)
{
	uint8_t before = r->flags;

	if (on == !!(before & R_INFLIGHT))
		return;
	r->flags = on ? (uint8_t)(before | R_INFLIGHT) : (uint8_t)(before & ~R_INFLIGHT);
	table_at(r->rt)->n_inflight += on ? 1 : (uint64_t)-1;
	nl_pending_update(r, before);
}

/* ---- queue ---- */

void
nl_kick(void)
{
	if (nl.open && !nl.kick_on) {
		uv_idle_start(&nl.kick, nl_on_kick);
		nl.kick_on = true;
	}
}

/* Append r to a FIFO linked through qnext (the write queue, or the held routes). */
static void
fifo_append(struct route **head, struct route **tail, struct route *r)
{
	r->qnext = 0;
	if (*tail)
		(*tail)->qnext = route_ref(r);
	else
		*head = r;
	*tail = r;
}

/* r is on one of the writer's lists (queue, held, waiting for devices): it counts as queued and pending. */
static void
mark_queued(struct route *r)
{
	r->flags |= R_QUEUED;
	nl_pending_update(r, (uint8_t)(r->flags & ~R_QUEUED));
	nl.queued++;
}

void
nl_enqueue(struct route *r)
{
	if (!(r->flags & (R_QUEUED | R_INFLIGHT)))
		r->since = (uint16_t)uv_now(nl.loop);
	/* A new desired state is worth trying now, whatever failed before. */
	nl_set_state(r, R_FAILED, false);
	nl_set_state(r, R_WAITING, false);
	if (r->flags & (R_QUEUED | R_INFLIGHT))
		return; /* in flight: re-queued when its ACK shows want moved on */
	mark_queued(r);
	fifo_append(&nl.qhead, &nl.qtail, r);
	nl_kick();
}

struct route *
nl_dequeue(void)
{
	struct route *r = nl.qhead;

	if (!r)
		return NULL;
	nl.qhead = route_at(r->qnext);
	if (!nl.qhead)
		nl.qtail = NULL;
	r->qnext = 0;
	r->flags &= (uint8_t)~R_QUEUED;
	nl_pending_update(r, (uint8_t)(r->flags | R_QUEUED));
	nl.queued--;
	return r;
}

void
nl_route_lost(struct route *r)
{
	nl.st.routes_lost++;
	nl_set_have(r, NULL);
	r->flags |= R_EXCL; /* another route may hold the key now: never replace it */
	nl_enqueue(r);
}

void
nl_route_forget(struct route *r)
{
	nl_set_have(r, NULL);
}

void
nl_route_changed(struct route *r, struct rattr *now)
{
	route_set_have(r, now); /* still installed: the count stays */
	nl_enqueue(r);
}

/* Hold a route until its table's first scan is done, or until couple; it counts as queued. */
void
nl_hold(struct route *r)
{
	mark_queued(r);
	nl.held++;
	fifo_append(&nl.hhead, &nl.htail, r);
}

/*
 * A route whose gateways' devices are being asked for (nl_send.c) waits on
 * its set's list, counted as queued, until the answer comes. The list holds a
 * reference to the set: the route's want may move on meanwhile.
 */
void
nl_wait_resolve(struct route *r)
{
	struct rattr *a = route_want(r);

	mark_queued(r);
	if (!a->wait_head)
		rattr_ref(a);
	fifo_append(&a->wait_head, &a->wait_tail, r);
}

/* a's question is answered (or will not be): its waiting routes go back to the head of the queue. */
void
nl_release_resolving(struct rattr *a)
{
	if (!a->wait_head)
		return;
	a->wait_tail->qnext = route_ref(nl.qhead);
	if (!nl.qhead)
		nl.qtail = a->wait_tail;
	nl.qhead = a->wait_head;
	a->wait_head = a->wait_tail = NULL;
	nl_kick();
	rattr_unref(a); /* the caller holds another */
}

void
nl_release_held(struct rtable *t)
{
	struct route *r = nl.hhead, *prev = NULL, *next;

	for (; r; r = next) {
		next = route_at(r->qnext);
		if (r->rt != t->idx) {
			prev = r;
			continue;
		}
		if (prev)
			prev->qnext = r->qnext;
		else
			nl.hhead = next;
		nl.held--;
		if (nl.htail == r)
			nl.htail = prev;
		fifo_append(&nl.qhead, &nl.qtail, r);
	}
	nl_kick();
}

/* Put a route back at the head (it did not fit in this batch). */
void
nl_requeue_head(struct route *r)
{
	mark_queued(r);
	r->qnext = route_ref(nl.qhead);
	nl.qhead = r;
	if (!nl.qtail)
		nl.qtail = r;
}

uint64_t
nl_pending(void)
{
	return nl.queued + nl.ring_n;
}

uint64_t
nl_held(void)
{
	return nl.held;
}

void
nl_finish(struct route *r, int err, const char *text)
{
	if (!err) {
		double s = (double)(uint16_t)((uint16_t)uv_now(nl.loop) - r->since) / 1000;
		unsigned b = 0;
		while (b < NL_LAT_BUCKETS && s > nl_lat_bounds[b])
			b++;
		nl.st.lat_count[b]++;
		nl.st.lat_total++;
		nl.st.lat_sum_s += s;
	}
	if (nl.hooks.done)
		nl.hooks.done(r, err, text);
}

/* ---- parking ---- */

void
nl_park(struct route *r)
{
	if (r->flags & R_PARKED)
		return;
	if (nl.n_parked == nl.cap_parked) {
		size_t cap = nl.cap_parked ? nl.cap_parked * 2 : 256;
		struct route **p = realloc(nl.parked, cap * sizeof(*p));
		if (!p) {
			/* Cannot remember it: try again at once rather than lose it. */
			log_warn("nl: out of memory parking a failed route; retrying it now");
			nl_enqueue(r);
			return;
		}
		nl.parked = p;
		nl.cap_parked = cap;
	}
	nl.parked[nl.n_parked++] = r;
	r->flags |= R_PARKED;
	if (r->flags & R_FAILED) {
		/* A failure after a quiet spell starts the backoff from the beginning. */
		uint64_t now = uv_hrtime();
		if (now - nl.last_fail_ns > (uint64_t)NL_RETRY_MAX_MS * 2 * 1000000u)
			nl.retry_ms = NL_RETRY_MIN_MS;
		nl.last_fail_ns = now;
		nl.failed_parked++;
		if (!uv_is_active((uv_handle_t *)&nl.retry))
			uv_timer_start(&nl.retry, nl_on_retry, nl.retry_ms, 0);
	}
}

/*
 * Walk the parked routes: those with `flag` go back on the queue; those no longer
 * failed or waiting (their owner changed them) are dropped from the vector.
 */
static void
unpark(uint8_t flag)
{
	size_t keep = 0;

	nl.failed_parked = 0;

	for (size_t i = 0; i < nl.n_parked; i++) {
		struct route *r = nl.parked[i];
		if ((r->flags & flag) || !(r->flags & (R_FAILED | R_WAITING))) {
			r->flags &= (uint8_t)~R_PARKED;
			if (r->flags & flag) {
				nl.st.retries++;
				nl_enqueue(r);
			} else if (!(r->flags & (R_QUEUED | R_INFLIGHT))) {
				nl_finish(r, -1, NULL); /* let the owner release it if unused */
			}
			continue;
		}
		nl.failed_parked += (r->flags & R_FAILED) != 0;
		nl.parked[keep++] = r;
	}
	nl.n_parked = keep;
}

void
nl_links_changed(void)
{
	nl.link_gen++; /* interface indexes are looked up again */
	unpark(R_WAITING);
}

static void
nl_on_retry(uv_timer_t *h)
{
	(void)h;
	unpark(R_FAILED);
	/* Back off while routes keep failing; the next park re-arms the timer. */
	nl.retry_ms = nl.retry_ms * 2 > NL_RETRY_MAX_MS ? NL_RETRY_MAX_MS : nl.retry_ms * 2;
	if (nl.failed_parked)
		uv_timer_start(&nl.retry, nl_on_retry, nl.retry_ms, 0);
}

/* ---- setup ---- */

static int
open_socket(struct mnl_socket **ret, unsigned groups, int size)
{
	struct mnl_socket *s = mnl_socket_open2(NETLINK_ROUTE, SOCK_NONBLOCK | SOCK_CLOEXEC);
	int one = 1;

	if (!s)
		return -errno;
	if (mnl_socket_bind(s, groups, MNL_SOCKET_AUTOPID) < 0) {
		int err = -errno;
		mnl_socket_close(s);
		return err;
	}
	mnl_socket_setsockopt(s, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(s, NETLINK_CAP_ACK, &one, sizeof(one));
	/* A large receive buffer for a window of ACKs; FORCE needs CAP_NET_ADMIN. */
	if (setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	*ret = s;
	return 0;
}

/*
 * Does this kernel take nexthop objects (Linux 5.3+)? Make a blackhole object
 * and delete it again, on a socket of its own, before the loop starts.
 */
static bool
probe_nh_objects(void)
{
	struct mnl_socket *s = mnl_socket_open(NETLINK_ROUTE);
	_Alignas(8) char buf[512];
	bool ok = false;

	if (!s || mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0)
		goto out;
	for (int del = 0; del < 2; del++) {
		struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
		struct nhmsg *nhm;
		ssize_t n;
		nlh->nlmsg_type = del ? RTM_DELNEXTHOP : RTM_NEWNEXTHOP;
		nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (del ? 0 : NLM_F_CREATE | NLM_F_REPLACE);
		nlh->nlmsg_seq = 1 + (uint32_t)del;
		nhm = mnl_nlmsg_put_extra_header(nlh, sizeof(*nhm));
		/* A delete names the id alone: the kernel refuses other header fields. */
		nhm->nh_family = del ? AF_UNSPEC : AF_INET;
		nhm->nh_protocol = del ? 0 : nl.protocol;
		mnl_attr_put_u32(nlh, NHA_ID, NL_NH_PROBE_ID);
		if (!del)
			mnl_attr_put(nlh, NHA_BLACKHOLE, 0, NULL);
		if (mnl_socket_sendto(s, nlh, nlh->nlmsg_len) < 0 ||
		    (n = mnl_socket_recvfrom(s, buf, sizeof(buf))) < 0 ||
		    mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, mnl_socket_get_portid(s), NULL, NULL) < 0) {
			if (!del)
				log_info("nl: the kernel refuses nexthop objects (%s): using inline nexthops",
				    strerror(errno));
			goto out;
		}
	}
	ok = true;
out:
	if (s)
		mnl_socket_close(s);
	return ok;
}

/*
 * Objects of fibd's found at start, sorted by id: adopted routes refer to them.
 * Each goes to one attribute set (nl_claim_old_nh_object), which deletes it
 * when it is freed.
 */
struct old_nhobj {
	struct kmsg_nhobj o;
	bool claimed;
};
static struct old_nhobj *old_objs;
static size_t n_old_objs, cap_old_objs;

static int
nh_dump_cb(const struct nlmsghdr *nlh, void *data)
{
	uint32_t *max_id = data;
	struct kmsg_nhobj o;

	if (!kmsg_nhobj_parse(nlh, nl.protocol, &o))
		return MNL_CB_OK;
	if (o.id > *max_id)
		*max_id = o.id;
	if (n_old_objs == cap_old_objs) {
		size_t cap = cap_old_objs ? cap_old_objs * 2 : 64;
		struct old_nhobj *p = realloc(old_objs, cap * sizeof(*p));
		if (!p)
			return MNL_CB_OK; /* adopted routes then fall back to a replace */
		old_objs = p;
		cap_old_objs = cap;
	}
	old_objs[n_old_objs].o = o;
	old_objs[n_old_objs++].claimed = false;
	return MNL_CB_OK;
}

static int
cmp_nhobj(const void *a, const void *b)
{
	uint32_t x = ((const struct old_nhobj *)a)->o.id, y = ((const struct old_nhobj *)b)->o.id;
	return (x > y) - (x < y);
}

static struct old_nhobj *
find_old(uint32_t id)
{
	struct old_nhobj key = { .o.id = id };

	if (!n_old_objs)
		return NULL;
	return bsearch(&key, old_objs, n_old_objs, sizeof(*old_objs), cmp_nhobj);
}

const struct kmsg_nhobj *
nl_old_nh_object(uint32_t id)
{
	struct old_nhobj *p = find_old(id);

	return p ? &p->o : NULL;
}

bool
nl_claim_old_nh_object(uint32_t id)
{
	struct old_nhobj *p = find_old(id);

	if (!p || p->claimed)
		return false;
	p->claimed = true;
	return true;
}

/* The set that claimed it went before any route held it (a dump thrown away): claimable again. */
void
nl_unclaim_old_nh_object(uint32_t id)
{
	struct old_nhobj *p = find_old(id);

	if (p)
		p->claimed = false;
}

/*
 * A fibd that ran before may have left nexthop objects, still used by the
 * routes this fibd adopts: start the ids above theirs. (Objects nobody uses any
 * more stay until the sync engine prunes them.)
 */
static void
skip_used_nh_ids(void)
{
	struct mnl_socket *s = mnl_socket_open(NETLINK_ROUTE);
	_Alignas(8) char buf[65536];
	struct nlmsghdr *nlh;
	struct nhmsg *nhm;
	uint32_t max_id = 0;
	ssize_t n;
	int r = MNL_CB_OK;

	if (!s || mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0)
		goto out;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETNEXTHOP;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = 1;
	nhm = mnl_nlmsg_put_extra_header(nlh, sizeof(*nhm));
	nhm->nh_family = AF_UNSPEC;
	if (mnl_socket_sendto(s, nlh, nlh->nlmsg_len) < 0)
		goto out;
	while (r > MNL_CB_STOP && (n = mnl_socket_recvfrom(s, buf, sizeof(buf))) > 0)
		r = mnl_cb_run(buf, (size_t)n, 1, mnl_socket_get_portid(s), nh_dump_cb, &max_id);
	if (n_old_objs)
		qsort(old_objs, n_old_objs, sizeof(*old_objs), cmp_nhobj);
	if (max_id >= NL_NH_ID_BASE && max_id < UINT32_MAX) {
		nl.next_nh_id = max_id + 1;
		log_info("nl: nexthop objects of an earlier fibd found; new ids start at %u",
		    nl.next_nh_id);
	}
out:
	if (s)
		mnl_socket_close(s);
}

void
nl_use_nh_objects(int mode)
{
	nl.use_nhid = mode > 0 || (mode < 0 && probe_nh_objects());
	if (nl.use_nhid)
		skip_used_nh_ids();
	log_info("nl: %s", nl.use_nhid ? "routes refer to kernel nexthop objects"
				       : "routes carry their nexthops inline");
}

uint32_t
nl_portid(void)
{
	return nl.wr_portid;
}

int
nl_init(uv_loop_t *loop, uint8_t protocol, const struct nl_hooks *hooks)
{
	int r;

	memset(&nl, 0, sizeof(nl)); /* nothing of an earlier run (tests init again) */
	nl.loop = loop;
	nl.protocol = protocol;
	nl.hooks = *hooks;
	nl.retry_ms = NL_RETRY_MIN_MS;
	nl.next_nh_id = NL_NH_ID_BASE;
	rattr_set_free_hook(nl_on_rattr_free);
	nl.seq = (uint32_t)time(NULL);
	if ((r = open_socket(&nl.wr, 0, NL_RCVBUF)) < 0)
		return r;
	nl.wr_portid = mnl_socket_get_portid(nl.wr);
	for (int k = 0; k < NL_MMSG; k++) {
		nl.mm.iov[k].iov_base = nl.mm.buf[k];
		nl.mm.iov[k].iov_len = NL_MMSG_BUF;
		nl.mm.hdr[k].msg_hdr.msg_iov = &nl.mm.iov[k];
		nl.mm.hdr[k].msg_hdr.msg_iovlen = 1;
	}
	uv_poll_init(loop, &nl.wr_poll, mnl_socket_get_fd(nl.wr));
	uv_idle_init(loop, &nl.kick);
	uv_timer_init(loop, &nl.retry);
	if ((r = nl_writer_start(loop)) < 0) {
		uv_close((uv_handle_t *)&nl.wr_poll, NULL);
		uv_close((uv_handle_t *)&nl.kick, NULL);
		uv_close((uv_handle_t *)&nl.retry, NULL);
		mnl_socket_close(nl.wr);
		return r;
	}
	nl.batch = nl_writer_buf();
	uv_poll_start(&nl.wr_poll, UV_READABLE, nl_on_wr);
	nl.open = true;
	if (nl.qhead)
		nl_kick();
	return 0;
}

void
nl_close(void)
{
	if (!nl.open)
		return;
	nl.open = false;
	nl_writer_stop(); /* after the send under way; the socket is its */
	uv_close((uv_handle_t *)&nl.wr_poll, NULL);
	uv_close((uv_handle_t *)&nl.kick, NULL);
	uv_close((uv_handle_t *)&nl.retry, NULL);
	mnl_socket_close(nl.wr);
	for (; nl.ring_n; nl.ring_n--) {
		rattr_unref(nl.ring[nl.ring_head].sent);
		nl.ring_head = (nl.ring_head + 1) % NL_WINDOW_MAX;
	}
	nl.batch = NULL;
	nl.batch_len = 0;
	nl.batch_msgs = 0;
	free(nl.parked);
	nl.parked = NULL;
	/* Objects still waiting for deletion stay; the next fibd finds them unused. */
	free(nl.nh_dels);
	nl.nh_dels = NULL;
	nl.n_nh_dels = nl.cap_nh_dels = 0;
	nl.n_parked = nl.cap_parked = 0;
	for (unsigned i = 0; i < nl.n_texts; i++)
		free((void *)(uintptr_t)nl.texts[i]);
	nl.n_texts = 0;
}

void
nl_poll(void)
{
	nl_on_wr(&nl.wr_poll, 0, UV_READABLE);
}

void
nl_get_stats(struct nl_stats *ret)
{
	*ret = nl.st;
	ret->inflight = nl.ring_n;
	ret->window = NL_WINDOW_MAX;
	ret->queued = nl.queued;
	ret->parked = nl.n_parked;
	ret->batch_limit = NL_BATCH_BYTES;
	ret->batches_queued = nl.open ? nl_writer_busy() : 0;
	ret->nh_objects = nl.use_nhid;
}
