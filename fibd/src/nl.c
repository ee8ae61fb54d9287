/*
 * nl: the netlink writer (kernel I/O layer; see docs/design.md).
 *
 * Write path. Routes wait on one FIFO write queue (intrusive, through qnext;
 * R_QUEUED says a route is on it, so it is there at most once). The writer runs
 * from an idle handle while there is work and room in the window: it pops routes,
 * builds RTM_NEWROUTE or RTM_DELROUTE for each from the route's current `want`,
 * appends them to one batch buffer and sends the batch in one send(). Each
 * message carries NLM_F_ACK and its own sequence number; the ring of messages in
 * flight is in sequence order, and so are the kernel's ACKs on this socket.
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

#define NL_RCVBUF (32 * 1024 * 1024)
#define NL_TEXT_INTERN_MAX 255 /* a route keeps an 8-bit index */
#define NL_RUN_NS 3000000ull /* 3 ms per callback: well under the 10 ms bound, for low loop lag */
/*
 * The kernel applies a whole batch inside send(), so one send is one slice of
 * our callback. Batches shrink when a send takes longer than this and grow back
 * when sends are quick.
 */
#define NL_SEND_TARGET_NS 2000000ull
#define NL_BATCH_MIN 4096
#define NL_MMSG 64        /* ACK datagrams per recvmmsg */
#define NL_MMSG_BUF 2048  /* an ACK: our message's header and the extended-ACK text */

enum op { OP_ADD_EXCL, OP_REPLACE, OP_DEL, OP_NH_ADD, OP_NH_DEL };

/* fibd's nexthop object ids start here, clear of ids an operator picks by hand. */
#define NL_NH_ID_BASE 0x10000000u
#define NL_NH_PROBE_ID 0x0fffffffu

struct inflight {
	uint32_t seq;
	uint8_t op;
	struct route *r;    /* NULL for nexthop objects */
	struct rattr *sent; /* reference; NULL for a delete */
	uint32_t nh_id;     /* OP_NH_DEL */
};

static struct {
	uv_loop_t *loop;
	struct mnl_socket *wr;
	uv_poll_t wr_poll;
	uv_idle_t kick;
	uv_timer_t retry;
	bool open;
	bool kick_on;
	int wr_events;
	uint8_t protocol;
	struct nl_hooks hooks;
	uint32_t seq;
	struct route *qhead, *qtail;
	uint64_t queued;              /* on the queue or held */
	struct route *hhead, *htail;  /* held until their table's first scan is done, or couple */
	uint64_t held;
	struct inflight ring[NL_WINDOW_MAX];
	uint32_t ring_head, ring_n;
	_Alignas(8) char batch[NL_BATCH_BYTES + 8192];
	size_t batch_len;
	uint32_t batch_msgs;  /* messages in it, the last ones in the ring */
	size_t batch_limit; /* adapts so that one send stays near NL_SEND_TARGET_NS */
	struct route **parked;
	size_t n_parked, cap_parked;
	size_t failed_parked; /* parked as FAILED when the vector was last walked, or since */
	uint64_t last_fail_ns;
	uint32_t retry_ms;
	uint32_t link_gen;
	uint32_t wr_portid;   /* the writer's netlink port: notifications of its writes carry it */
	bool use_nhid;        /* kernel nexthop objects instead of inline nexthops */
	uint32_t next_nh_id;
	uint32_t *nh_dels;    /* nexthop objects to delete */
	size_t n_nh_dels, cap_nh_dels;
	struct {
		_Alignas(8) char buf[NL_MMSG][NL_MMSG_BUF];
		struct iovec iov[NL_MMSG];
		struct mmsghdr hdr[NL_MMSG];
	} mm;
	const char *texts[NL_TEXT_INTERN_MAX];
	unsigned n_texts;
	struct nl_stats st;
} nl;

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

static nl_send_fn io_send = real_send;
static nl_recvmmsg_fn io_recvmmsg = real_recvmmsg;

void
nl_set_io(nl_send_fn send_fn, nl_recvmmsg_fn recvmmsg_fn)
{
	io_send = send_fn ? send_fn : real_send;
	io_recvmmsg = recvmmsg_fn ? recvmmsg_fn : real_recvmmsg;
}

static void nl_on_kick(uv_idle_t *h);
static void nl_on_retry(uv_timer_t *h);
static void complete(struct inflight f, int err, const char *text);
static void lose_oldest(uint32_t n);

/*
 * Kernel messages are few distinct strings: keep one copy of each, and give
 * routes a small index (1-based; 0 is no text).
 */
static uint8_t
intern_text(const char *s)
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

static void
set_state(struct route *r, uint8_t flag, bool on)
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

static void
set_have(struct route *r, struct rattr *a)
{
	struct rtable *t = table_at(r->rt);

	if (!r->have && a)
		t->n_installed++;
	else if (r->have && !a)
		t->n_installed--;
	rattr_unref(r->have);
	r->have = a;
}

/* A route counts as pending in its table while queued or in flight. */
static void
pending_update(struct route *r, uint8_t before)
{
	bool was = before & (R_QUEUED | R_INFLIGHT), is = r->flags & (R_QUEUED | R_INFLIGHT);

	if (was != is)
		table_at(r->rt)->n_pending += is ? 1 : (uint64_t)-1;
}

/* ---- queue ---- */

static void
kick(void)
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
	r->qnext = NULL;
	if (*tail)
		(*tail)->qnext = r;
	else
		*head = r;
	*tail = r;
}

const double nl_lat_bounds[NL_LAT_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

void
nl_enqueue(struct route *r)
{
	if (!(r->flags & (R_QUEUED | R_INFLIGHT)))
		r->since = (uint16_t)uv_now(nl.loop);
	/* A new desired state is worth trying now, whatever failed before. */
	set_state(r, R_FAILED, false);
	set_state(r, R_WAITING, false);
	if (r->flags & (R_QUEUED | R_INFLIGHT))
		return; /* in flight: re-queued when its ACK shows want moved on */
	r->flags |= R_QUEUED;
	pending_update(r, (uint8_t)(r->flags & ~R_QUEUED));
	fifo_append(&nl.qhead, &nl.qtail, r);
	nl.queued++;
	kick();
}

static struct route *
dequeue(void)
{
	struct route *r = nl.qhead;

	if (!r)
		return NULL;
	nl.qhead = r->qnext;
	if (!nl.qhead)
		nl.qtail = NULL;
	r->qnext = NULL;
	r->flags &= (uint8_t)~R_QUEUED;
	pending_update(r, (uint8_t)(r->flags | R_QUEUED));
	nl.queued--;
	return r;
}

void
nl_route_lost(struct route *r)
{
	nl.st.routes_lost++;
	set_have(r, NULL);
	r->flags |= R_EXCL; /* another route may hold the key now: never replace it */
	nl_enqueue(r);
}

void
nl_route_forget(struct route *r)
{
	set_have(r, NULL);
}

void
nl_route_changed(struct route *r, struct rattr *now)
{
	rattr_unref(r->have);
	r->have = now; /* still installed: the count stays */
	nl_enqueue(r);
}

/* Hold a route until its table's first scan is done, or until couple; it counts as queued. */
static void
hold(struct route *r)
{
	r->flags |= R_QUEUED;
	pending_update(r, (uint8_t)(r->flags & ~R_QUEUED));
	nl.queued++;
	nl.held++;
	fifo_append(&nl.hhead, &nl.htail, r);
}

void
nl_release_held(struct rtable *t)
{
	struct route **link = &nl.hhead, *prev = NULL;

	while (*link) {
		struct route *r = *link;
		if (r->rt != t->idx) {
			prev = r;
			link = &r->qnext;
			continue;
		}
		*link = r->qnext;
		nl.held--;
		if (nl.htail == r)
			nl.htail = prev;
		fifo_append(&nl.qhead, &nl.qtail, r);
	}
	kick();
}

/* Put a route back at the head (it did not fit in this batch). */
static void
requeue_head(struct route *r)
{
	r->flags |= R_QUEUED;
	pending_update(r, (uint8_t)(r->flags & ~R_QUEUED));
	r->qnext = nl.qhead;
	nl.qhead = r;
	if (!nl.qtail)
		nl.qtail = r;
	nl.queued++;
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

static void
finish(struct route *r, int err, const char *text)
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

static void
park(struct route *r)
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
				finish(r, -1, NULL); /* let the owner release it if unused */
			}
			continue;
		}
		nl.failed_parked += (r->flags & R_FAILED) != 0;
		nl.parked[keep++] = r;
	}
	nl.n_parked = keep;
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

/* ---- building messages ---- */

static int
ifindex_of(struct rnh *nh)
{
	if (!nh->ifname[0])
		return 0;
	if (nh->link_gen != nl.link_gen || nh->ifindex <= 0) {
		nh->ifindex = (int)if_nametoindex(nh->ifname);
		nh->link_gen = nl.link_gen;
	}
	return nh->ifindex;
}

static uint32_t
ring_push(enum op op, struct route *r, struct rattr *sent, uint32_t nh_id)
{
	struct inflight *f = &nl.ring[(nl.ring_head + nl.ring_n) % NL_WINDOW_MAX];

	f->seq = ++nl.seq;
	f->op = (uint8_t)op;
	f->r = r;
	f->sent = rattr_ref(sent);
	f->nh_id = nh_id;
	nl.ring_n++;
	nl.batch_msgs++;
	nl.st.msgs_sent++;
	return f->seq;
}

/* One nexthop object: a gateway and/or a device, or a group of members. */
static void
put_nh_object(struct rattr *a, int member, uint32_t id)
{
	nl.batch_len += kmsg_put_nh_object(nl.batch + nl.batch_len, ring_push(OP_NH_ADD, NULL, a, id),
	    nl.protocol, a, member, id);
}

/* Objects for a's nexthops: one for a single nexthop, members and a group for ECMP. */
static void
put_nh_objects(struct rattr *a)
{
	unsigned n = a->n_nh > 1 ? a->n_nh + 1u : 1u;

	/* Fresh ids every time: a failed attempt may have left some of the old ones. */
	a->nh_id = nl.next_nh_id + n - 1;
	nl.next_nh_id += n;
	if (nl.next_nh_id < NL_NH_ID_BASE)
		nl.next_nh_id = NL_NH_ID_BASE;
	if (a->n_nh == 1) {
		put_nh_object(a, 0, a->nh_id);
	} else {
		for (unsigned i = 0; i < a->n_nh; i++)
			put_nh_object(a, (int)i, a->nh_id - a->n_nh + i);
		put_nh_object(a, -1, a->nh_id);
	}
	a->nh_state = RATTR_NH_CREATED;
	a->nh_err = 0;
}

/*
 * Nexthop objects need a device; a nexthop given by its gateway alone is
 * resolved by the kernel only inline, so such routes stay inline.
 */
static bool
wants_nh_object(const struct rattr *a)
{
	if (!nl.use_nhid || !a || a->type != PS_RT_UNICAST || !a->n_nh)
		return false;
	for (unsigned i = 0; i < a->n_nh; i++)
		if (!a->nh[i].ifname[0])
			return false;
	return true;
}

/* Queue the deletion of a's kernel objects (a is about to be freed or recreated). */
static void
drop_nh_objects(struct rattr *a)
{
	unsigned n;

	if (!a->nh_id)
		return;
	n = a->n_nh > 1 ? a->n_nh + 1u : 1u;
	if (nl.n_nh_dels + n > nl.cap_nh_dels) {
		size_t cap = nl.cap_nh_dels ? nl.cap_nh_dels * 2 : 256;
		uint32_t *d;
		while (cap < nl.n_nh_dels + n)
			cap *= 2;
		if (!(d = realloc(nl.nh_dels, cap * sizeof(*d)))) {
			log_warn("nl: out of memory; nexthop object %u stays in the kernel", a->nh_id);
			a->nh_id = 0;
			return;
		}
		nl.nh_dels = d;
		nl.cap_nh_dels = cap;
	}
	/* Taken from the end: the group goes first, then its members. */
	for (unsigned i = n; i-- > 0;)
		nl.nh_dels[nl.n_nh_dels++] = a->nh_id - i;
	a->nh_id = 0;
	a->nh_state = RATTR_NH_NONE;
	kick();
}

/* The kernel removed a's objects itself: forget them without deleting anything. */
static void
forget_nh_objects(struct rattr *a)
{
	a->nh_id = 0;
	a->nh_state = RATTR_NH_NONE;
	a->nh_err = 0;
}

static void
forget_if_on_link(struct rattr *a, void *ctx)
{
	int ifindex = *(int *)ctx;

	if (a->nh_state != RATTR_NH_CREATED)
		return;
	for (unsigned i = 0; i < a->n_nh; i++)
		if (a->nh[i].ifindex == ifindex) {
			forget_nh_objects(a);
			return;
		}
}

/*
 * A link went down or away: the kernel flushes the nexthop objects on it, and
 * the routes using them, without a notification of either.
 */
void
nl_link_down(int ifindex)
{
	rattr_for_each(forget_if_on_link, &ifindex);
}

void
nl_links_changed(void)
{
	nl.link_gen++; /* interface indexes are looked up again */
	unpark(R_WAITING);
}

static void
nl_on_rattr_free(struct rattr *a)
{
	if (nl.open)
		drop_nh_objects(a);
}

/*
 * Append the messages for r at op to the batch and record them in the window:
 * the nexthop objects the route needs first (when fibd uses them and they are
 * not there yet), then the route. Returns 1 if appended, 0 if it does not fit
 * (nothing appended), or -ENODEV if an interface named by a nexthop does not
 * exist now.
 */
static int
build(struct route *r, enum op op)
{
	struct rtable *t = table_at(r->rt);
	struct rattr *a = r->want;
	size_t room = sizeof(nl.batch) - nl.batch_len;
	bool nhid = op != OP_DEL && wants_nh_object(a);
	unsigned objects = nhid && a->nh_state != RATTR_NH_CREATED ? (a->n_nh > 1 ? a->n_nh + 1u : 1u)
								     : 0;

	/*
	 * The largest route message (256 nexthops) is under KMSG_MAX, and so is
	 * each nexthop object: keep room for all that this route needs.
	 */
	if (room < KMSG_MAX + objects * 128u + (objects > 1 ? 2048u : 0u))
		return 0;
	if (nl.ring_n + objects + 1 > NL_WINDOW_MAX)
		return 0;
	if (a)
		for (unsigned i = 0; i < a->n_nh; i++)
			if (a->nh[i].ifname[0] && ifindex_of(&a->nh[i]) <= 0)
				return -ENODEV;
	if (objects) {
		if (a->nh_state == RATTR_NH_FAILED)
			drop_nh_objects(a);
		put_nh_objects(a);
	}

	{
		struct kmsg_key k = { .table = t->id, .family = t->family, .plen = route_plen(r),
			.tos = r->tos, .metric = r->metric };
		route_prefix(r, &k.prefix);
		nl.batch_len += kmsg_put_route(nl.batch + nl.batch_len,
		    ring_push(op, r, op == OP_DEL ? NULL : a, 0),
		    op == OP_DEL ? KMSG_DEL : op == OP_REPLACE ? KMSG_REPLACE : KMSG_ADD_EXCL, &k,
		    nl.protocol, a, nhid);
	}
	return 1;
}

/* ---- sending ---- */

static void nl_on_wr(uv_poll_t *h, int status, int events);

/*
 * The kernel refused the whole batch (send failed with err): none of its
 * messages was applied, and no ACK will come for them. They are the last
 * batch_msgs entries of the window; each fails with err, as if refused alone,
 * so that its route is parked and retried and its slot is free again.
 */
static void
refuse_batch(int err)
{
	uint32_t n = nl.batch_msgs, first = (nl.ring_head + nl.ring_n - n) % NL_WINDOW_MAX;

	log_warn_errno(err, "nl: the kernel refused a %zu-byte batch of %u messages; "
			    "each fails with this error", nl.batch_len, n);
	nl.st.batches_refused++;
	nl.batch_len = 0;
	nl.batch_msgs = 0;
	nl.ring_n -= n;
	for (uint32_t i = 0; i < n; i++)
		complete(nl.ring[(first + i) % NL_WINDOW_MAX], err, "the kernel refused the batch");
}

/* Send the pending batch. Returns 0 when sent (or nothing to send), -EAGAIN to wait. */
static int
flush(void)
{
	ssize_t n;

	uint64_t t0;

	if (!nl.batch_len)
		return 0;
	t0 = uv_hrtime();
	n = io_send(nl.batch, nl.batch_len);
	if (n >= 0) {
		uint64_t dt = uv_hrtime() - t0;
		if (dt / 1000 > nl.st.send_max_us)
			nl.st.send_max_us = dt / 1000;
		if (dt > 2 * NL_SEND_TARGET_NS && nl.batch_limit > NL_BATCH_MIN)
			nl.batch_limit /= 2;
		else if (dt < NL_SEND_TARGET_NS / 2 && nl.batch_len >= nl.batch_limit &&
		    nl.batch_limit < NL_BATCH_BYTES)
			nl.batch_limit += nl.batch_limit / 4;
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
			nl.st.eagain++;
			uv_poll_start(&nl.wr_poll, UV_READABLE | UV_WRITABLE, nl_on_wr);
			nl.wr_events = UV_READABLE | UV_WRITABLE;
			return -EAGAIN;
		}
		refuse_batch(errno);
		return 0;
	}
	nl.st.batches_sent++;
	nl.batch_len = 0;
	nl.batch_msgs = 0;
	if (nl.wr_events & UV_WRITABLE) {
		uv_poll_start(&nl.wr_poll, UV_READABLE, nl_on_wr);
		nl.wr_events = UV_READABLE;
	}
	return 0;
}

/*
 * The kernel's route (an adopted one, in the form the dump gave it) already
 * means what the owner wants, as with a route fed without a device that the
 * kernel resolved: take want as have, and write nothing. Not while have holds
 * a nexthop object that want does not use: dropping have would delete the
 * object, and with it the route.
 */
static bool
kernel_fulfils(struct route *r)
{
	if (!r->have || !r->want || !rattr_fulfils(r->have, r->want) ||
	    (r->have->nh_id && r->have->nh_id != r->want->nh_id))
		return false;
	rattr_unref(r->have);
	r->have = rattr_ref(r->want); /* still installed: the count stays */
	r->flags &= (uint8_t)~R_EXCL;
	return true;
}

/* One writer step: fill and send a batch, bounded by window, bytes and time. */
static void
nl_on_kick(uv_idle_t *h)
{
	uint64_t deadline = uv_hrtime() + NL_RUN_NS;
	uint64_t t0 = health_cb_begin();
	(void)h;

	while (uv_hrtime() < deadline) {
		uint32_t msgs = 0;
		struct route *r;

		if (flush() < 0)
			break;
		while (nl.n_nh_dels && nl.ring_n < NL_WINDOW_MAX &&
		    sizeof(nl.batch) - nl.batch_len > 256) {
			uint32_t id = nl.nh_dels[--nl.n_nh_dels];
			nl.batch_len += kmsg_put_nh_del(nl.batch + nl.batch_len,
			    ring_push(OP_NH_DEL, NULL, NULL, id), id);
			msgs++;
		}
		while (nl.ring_n < NL_WINDOW_MAX && (r = dequeue())) {
			enum op op;
			int rc;
			if (r->flags & R_INFLIGHT)
				continue;
			if (r->want == r->have || kernel_fulfils(r)) {
				finish(r, -1, NULL); /* nothing to write after all */
				continue;
			}
			/*
			 * Held: a decoupled table is left alone until couple; no blind
			 * first write, the table's scan comes first (asked for here).
			 */
			if (table_at(r->rt)->decoupled ||
			    (nl.hooks.writable && !nl.hooks.writable(table_at(r->rt)))) {
				hold(r);
				continue;
			}
			if (!r->want)
				op = OP_DEL;
			else if (!r->have && (r->flags & R_EXCL))
				op = OP_ADD_EXCL;
			else
				op = OP_REPLACE;
			rc = build(r, op);
			if (rc == 0) {
				requeue_head(r);
				break;
			}
			if (rc < 0) {
				/* An interface is missing: wait for it like an unreachable nexthop. */
				r->err = ENODEV;
				r->errtext = intern_text("interface does not exist");
				set_state(r, R_WAITING, true);
				park(r);
				finish(r, ENODEV, nl_text(r->errtext));
				continue;
			}
			r->flags |= R_INFLIGHT;
			pending_update(r, (uint8_t)(r->flags & ~R_INFLIGHT));
			msgs++;
			if (op == OP_DEL)
				nl.st.deletes++;
			else if (op == OP_REPLACE)
				nl.st.replaces++;
			else
				nl.st.adds++;
			if (nl.batch_len >= nl.batch_limit)
				break;
		}
		if (!msgs && !nl.batch_len)
			break;
		if (flush() < 0)
			break;
		if (nl.ring_n >= NL_WINDOW_MAX || !nl.qhead)
			break;
	}
	if ((!nl.qhead || nl.ring_n >= NL_WINDOW_MAX) && !nl.batch_len && !nl.n_nh_dels) {
		uv_idle_stop(&nl.kick);
		nl.kick_on = false;
	}
	health_cb_end(t0, "netlink write");
}

/* ---- ACKs ---- */

struct ack_attrs {
	const char *msg;
};

static int
ack_attr_cb(const struct nlattr *attr, void *data)
{
	struct ack_attrs *a = data;

	if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG &&
	    mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0)
		a->msg = mnl_attr_get_str(attr);
	return MNL_CB_OK;
}

static bool
unreachable_errno(int err)
{
	return err == ENETUNREACH || err == ENODEV || err == ENETDOWN || err == EHOSTUNREACH;
}

/*
 * The outcome of one message that left the window: its ACK (err 0 or a
 * positive errno, text the kernel's extended-ACK message or NULL), or the
 * error of a batch the kernel refused as a whole.
 */
static void
complete(struct inflight f, int err, const char *text)
{
	struct ack_attrs aa = { text };
	struct route *r;

	if (f.op == OP_NH_ADD || f.op == OP_NH_DEL) {
		if (f.op == OP_NH_ADD && err && f.sent->nh_state == RATTR_NH_CREATED) {
			/* Routes using it fail too; they report this error, the real cause. */
			f.sent->nh_state = RATTR_NH_FAILED;
			f.sent->nh_err = (uint16_t)err;
		}
		if (err && !(f.op == OP_NH_DEL && err == ENOENT))
			log_debug("nl: nexthop object %u: %s%s%s", f.op == OP_NH_DEL ? f.nh_id : 0,
			    strerror(err), aa.msg ? ": " : "", aa.msg ? aa.msg : "");
		rattr_unref(f.sent);
		return;
	}
	r = f.r;
	r->flags &= (uint8_t)~R_INFLIGHT;
	pending_update(r, (uint8_t)(r->flags | R_INFLIGHT));
	if (err && f.sent && f.sent->nh_state == RATTR_NH_FAILED && f.sent->nh_err) {
		/* The object could not be made: that is the route's real error. */
		err = f.sent->nh_err;
		aa.msg = "nexthop object could not be made";
	}
	if (f.op == OP_DEL && err == ESRCH)
		err = 0; /* already gone: the delete is done */
	if (!err) {
		/* Once gone, the key may be taken by a foreign route: add with EXCL again. */
		if (f.op == OP_DEL) {
			set_have(r, NULL);
			r->flags |= R_EXCL;
		} else {
			set_have(r, rattr_ref(f.sent));
			r->flags &= (uint8_t)~R_EXCL;
			r->seen = table_at(r->rt)->epoch; /* the kernel has it as of now */
		}
		r->err = 0;
		r->errtext = 0;
		set_state(r, R_FAILED, false);
		set_state(r, R_WAITING, false);
		if (r->want != r->have)
			nl_enqueue(r);
	} else {
		nl.st.errors++;
		r->err = (uint8_t)(err < 256 ? err : EIO);
		r->errtext = intern_text(aa.msg);
		if (f.sent && f.sent->nh_state == RATTR_NH_CREATED && aa.msg &&
		    !strcmp(aa.msg, "Nexthop id does not exist")) {
			/* The kernel removed the object (its link went down): make a new one. */
			forget_nh_objects(f.sent);
			nl_enqueue(r);
			rattr_unref(f.sent);
			finish(r, -1, NULL);
			return;
		}
		if (err == EEXIST && f.op == OP_ADD_EXCL && nl.hooks.exists)
			nl.hooks.exists(table_at(r->rt)); /* fibd's own, missed by a dump? */
		if (r->want != f.sent) {
			/* It changed meanwhile: write the new state instead of parking. */
			nl_enqueue(r);
		} else {
			set_state(r, unreachable_errno(err) ? R_WAITING : R_FAILED, true);
			park(r);
		}
	}
	rattr_unref(f.sent);
	finish(r, err, nl_text(r->errtext));
}

/*
 * An ACK that is not for the oldest message in flight. The kernel answers the
 * messages of one socket in order, so the ones before it will get no ACK: they
 * were lost (or the kernel misbehaves). They are written again, and the ACK
 * is taken for its own message. An ACK for no message in flight is ignored.
 * Returns true when the ACK's message is now the oldest.
 */
static bool
ack_skips_to(uint32_t seq)
{
	uint32_t k;

	for (k = 1; k < nl.ring_n; k++)
		if (nl.ring[(nl.ring_head + k) % NL_WINDOW_MAX].seq == seq)
			break;
	if (k == nl.ring_n) {
		log_warn("nl: ACK for sequence %u matches no message in flight; ignored", seq);
		return false;
	}
	log_warn("nl: ACK for sequence %u came before those of %u earlier messages; "
		 "writing those again", seq, k);
	lose_oldest(k);
	return true;
}

static void
handle_ack(const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	struct ack_attrs aa = { NULL };
	struct inflight f;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e)))
		return;
	if (nl.ring_n && nl.ring[nl.ring_head].seq != nlh->nlmsg_seq && !ack_skips_to(nlh->nlmsg_seq))
		return;
	if (nl.ring_n == 0) {
		log_warn("nl: ACK for sequence %u with nothing in flight; ignored", nlh->nlmsg_seq);
		return;
	}
	f = nl.ring[nl.ring_head];
	nl.ring_head = (nl.ring_head + 1) % NL_WINDOW_MAX;
	nl.ring_n--;
	nl.st.acks++;

	if (e->error && (nlh->nlmsg_flags & NLM_F_ACK_TLVS)) {
		size_t off = sizeof(*e);
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
		if (mnl_nlmsg_size(off) <= nlh->nlmsg_len)
			mnl_attr_parse(nlh, (unsigned)off, ack_attr_cb, &aa);
	}
	complete(f, -e->error, aa.msg);
}

/*
 * The n oldest messages in flight will get no ACK: their routes are written
 * again (an add that did land is replaced by itself; one sent with EXCL may now
 * fail with EEXIST, which the next scan resolves), and nexthop objects are made
 * again with fresh ids.
 */
static void
lose_oldest(uint32_t n)
{
	while (n--) {
		struct inflight *f = &nl.ring[nl.ring_head];
		nl.ring_head = (nl.ring_head + 1) % NL_WINDOW_MAX;
		nl.ring_n--;
		if (f->r) {
			f->r->flags &= (uint8_t)~R_INFLIGHT;
			pending_update(f->r, (uint8_t)(f->r->flags | R_INFLIGHT));
			nl_enqueue(f->r);
		} else if (f->sent && f->op == OP_NH_ADD) {
			f->sent->nh_state = RATTR_NH_FAILED; /* made again with fresh ids */
			f->sent->nh_err = 0;
		}
		rattr_unref(f->sent);
	}
}

/* Every message in flight is lost (receive overrun): send them all again. */
static void
lose_window(void)
{
	log_warn("nl: %u ACKs lost (receive buffer overrun); writing those routes again",
	    nl.ring_n);
	/* A batch not sent yet is in the window too: it is built again. */
	nl.batch_len = 0;
	nl.batch_msgs = 0;
	lose_oldest(nl.ring_n);
}

static void
nl_on_wr(uv_poll_t *h, int status, int events)
{
	uint64_t t0 = health_cb_begin();
	(void)h;
	if (status < 0) {
		/*
		 * A pending socket error (ENOBUFS: ACKs were lost) shows as POLLERR,
		 * and libuv stops the handle on it. Watch again, and read: recvmmsg
		 * returns the error and clears it.
		 */
		uv_poll_start(&nl.wr_poll, nl.wr_events, nl_on_wr);
		events = UV_READABLE;
	}
	if (events & UV_READABLE) {
		/* Each ACK is a datagram of its own: take up to NL_MMSG per system call. */
		for (int i = 0; i < NL_RECV_BUDGET; i++) {
			int n = io_recvmmsg(nl.mm.hdr, NL_MMSG);
			if (n < 0) {
				if (errno == ENOBUFS)
					lose_window();
				break;
			}
			for (int k = 0; k < n; k++) {
				const struct nlmsghdr *nlh = (const struct nlmsghdr *)nl.mm.buf[k];
				int len = (int)nl.mm.hdr[k].msg_len;
				if (nl.mm.hdr[k].msg_hdr.msg_flags & MSG_TRUNC)
					log_warn("nl: an ACK was truncated to %d bytes", len);
				for (; kmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len))
					if (nlh->nlmsg_type == NLMSG_ERROR)
						handle_ack(nlh);
				nl.mm.hdr[k].msg_len = 0;
			}
			if (n < NL_MMSG)
				break;
		}
	}
	if (events & UV_WRITABLE)
		flush();
	if (nl.qhead && nl.ring_n < NL_WINDOW_MAX)
		kick();
	health_cb_end(t0, "netlink ACKs");
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

/* Objects of fibd's found at start, sorted by id: adopted routes refer to them. */
static struct kmsg_nhobj *old_objs;
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
		struct kmsg_nhobj *p = realloc(old_objs, cap * sizeof(*p));
		if (!p)
			return MNL_CB_OK; /* adopted routes then fall back to a replace */
		old_objs = p;
		cap_old_objs = cap;
	}
	old_objs[n_old_objs++] = o;
	return MNL_CB_OK;
}

static int
cmp_nhobj(const void *a, const void *b)
{
	uint32_t x = ((const struct kmsg_nhobj *)a)->id, y = ((const struct kmsg_nhobj *)b)->id;
	return (x > y) - (x < y);
}

const struct kmsg_nhobj *
nl_old_nh_object(uint32_t id)
{
	struct kmsg_nhobj key = { .id = id };

	if (!n_old_objs)
		return NULL;
	return bsearch(&key, old_objs, n_old_objs, sizeof(*old_objs), cmp_nhobj);
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

	memset(&nl.st, 0, sizeof(nl.st));
	nl.loop = loop;
	nl.protocol = protocol;
	nl.hooks = *hooks;
	nl.retry_ms = NL_RETRY_MIN_MS;
	nl.batch_limit = NL_BATCH_BYTES / 2;
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
	uv_poll_start(&nl.wr_poll, UV_READABLE, nl_on_wr);
	nl.wr_events = UV_READABLE;
	nl.open = true;
	if (nl.qhead)
		kick();
	return 0;
}

void
nl_close(void)
{
	if (!nl.open)
		return;
	nl.open = false;
	uv_close((uv_handle_t *)&nl.wr_poll, NULL);
	uv_close((uv_handle_t *)&nl.kick, NULL);
	uv_close((uv_handle_t *)&nl.retry, NULL);
	mnl_socket_close(nl.wr);
	for (; nl.ring_n; nl.ring_n--) {
		rattr_unref(nl.ring[nl.ring_head].sent);
		nl.ring_head = (nl.ring_head + 1) % NL_WINDOW_MAX;
	}
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
	ret->batch_limit = (uint32_t)nl.batch_limit;
	ret->nh_objects = nl.use_nhid;
}
