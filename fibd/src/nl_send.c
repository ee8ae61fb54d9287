/*
 * nl_send: the writer's batches (nl.c has the queue and the parked routes). A
 * callback pops routes, builds each one's messages (kmsg.c) into one buffer,
 * the nexthop objects a route needs first, and hands the buffer to the writer
 * thread (nl_writer.c), which sends it in one send while the loop goes on;
 * ACKs come back on the same socket in the order of the messages and are read
 * on the loop (nl_ack.c). Budgets: NL_RUN_NS per callback,
 * NL_WINDOW_MAX messages in flight, NL_SLOTS batches built ahead.
 */
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include <linux/nexthop.h>
#include <linux/rtnetlink.h>

#include "health.h"
#include "kmsg.h"
#include "log.h"
#include "nl-internal.h"

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
ring_push(enum op op, struct route *r, struct rattr *sent, uint32_t nh_id, bool echo)
{
	struct inflight *f = &nl.ring[(nl.ring_head + nl.ring_n) % NL_WINDOW_MAX];

	f->seq = ++nl.seq;
	if (!nl.batch_msgs)
		nl.batch_seq = f->seq;
	f->op = (uint8_t)op;
	f->r = r;
	f->sent = rattr_ref(sent);
	f->nh_id = nh_id;
	f->echo = echo;
	f->ack = true; /* kmsg.c asks for one; ask_acks takes back all it can */
	nl.ring_n++;
	nl.batch_msgs++;
	nl.st.msgs_sent++;
	return f->seq;
}

/* One nexthop object: a gateway and/or a device, or a group of members. */
static void
put_nh_object(struct rattr *a, int member, uint32_t id)
{
	nl.batch_len += kmsg_put_nh_object(nl.batch + nl.batch_len, ring_push(OP_NH_ADD, NULL, a, id, false),
	    nl.protocol, a, member, id);
}

/* Objects for a's nexthops: one for a single nexthop, members and a group for ECMP. */
static void
put_nh_objects(struct rattr *a)
{
	unsigned n = a->n_nh > 1 ? a->n_nh + 1u : 1u;

	/* Its own from now on: a set it borrowed from may go (and delete that object). */
	if (a->nh_owner)
		a->nh_owner = rattr_unref(a->nh_owner);
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
 * Routes whose nexthops fibd puts in a kernel nexthop object: unicast ones.
 * An object needs a device; for a nexthop given by its gateway alone that is
 * the device the kernel picks when it resolves the gateway, which it does only
 * for a route written inline (below). A large set of those stays inline.
 */
static bool
wants_nh_object(const struct rattr *a)
{
	bool gw_only = false;

	if (!nl.use_nhid || !a || a->type != PS_RT_UNICAST || !a->n_nh)
		return false;
	/* The kernel keeps an IPv4 realm per nexthop, and an object has none. */
	if (rattr_realm(a))
		return false;
	for (unsigned i = 0; i < a->n_nh; i++)
		if (!a->nh[i].ifname[0]) {
			if (!a->nh[i].gw_family || (a->nh[i].flags & PS_NH_ONLINK))
				return false; /* the kernel refuses these anyway: let it say so */
			gw_only = true;
		}
	return !gw_only || a->n_nh <= NL_RESOLVE_NH_MAX;
}

/*
 * The devices of a's nexthops given by their gateway alone. The kernel picks
 * each when it installs a route (the route's table first, then the rules, a
 * route of link scope to the gateway), and fibd asks it rather than guess:
 * the first route of the set is written inline with NLM_F_ECHO, and the
 * kernel's copy of it names the devices (handle_echo). The routes of the set
 * that come meanwhile wait for the answer (nl_wait_resolve), then take an
 * object on those devices, as routes fed with them do. An answer holds until
 * links or addresses change (link_gen); an object made holds until the kernel
 * drops it. If the kernel cannot resolve the gateways, the set's routes are
 * written inline, and fail or wait as such routes do.
 */
enum devices { DEV_KNOWN, DEV_ASK, DEV_ASKED, DEV_INLINE };

static enum devices
devices_of(struct rattr *a)
{
	bool gw_only = false;

	for (unsigned i = 0; i < a->n_nh; i++)
		gw_only |= !a->nh[i].ifname[0];
	if (!gw_only)
		return DEV_KNOWN;
	if (a->nh_res == RATTR_RES_ASKED)
		return DEV_ASKED;
	if (a->res_gen != nl.link_gen || a->nh_res == RATTR_RES_NONE)
		return DEV_ASK;
	return a->nh_res == RATTR_RES_DONE ? DEV_KNOWN : DEV_INLINE;
}

/* Room for n more nexthop objects to delete; false when out of memory. */
static bool
nh_dels_room(size_t n)
{
	size_t cap;
	uint32_t *d;

	if (nl.n_nh_dels + n <= nl.cap_nh_dels)
		return true;
	cap = nl.cap_nh_dels ? nl.cap_nh_dels * 2 : 256;
	while (cap < nl.n_nh_dels + n)
		cap *= 2;
	if (!(d = realloc(nl.nh_dels, cap * sizeof(*d))))
		return false;
	nl.nh_dels = d;
	nl.cap_nh_dels = cap;
	return true;
}

void
nl_delete_nh_object(uint32_t id)
{
	if (!nh_dels_room(1)) {
		log_warn("nl: out of memory; nexthop object %u stays in the kernel", id);
		return;
	}
	nl.nh_dels[nl.n_nh_dels++] = id;
	nl_kick();
}

/* Queue the deletion of a's kernel objects (a is about to be freed or recreated). */
static void
drop_nh_objects(struct rattr *a)
{
	unsigned n;

	if (a->nh_owner) {
		/* Another set's object: that set deletes it once no route uses either. */
		a->nh_owner = rattr_unref(a->nh_owner);
		a->nh_id = 0;
		a->nh_state = RATTR_NH_NONE;
		return;
	}
	if (!a->nh_id)
		return;
	n = a->n_nh > 1 ? a->n_nh + 1u : 1u;
	if (!nh_dels_room(n)) {
		log_warn("nl: out of memory; nexthop object %u stays in the kernel", a->nh_id);
		a->nh_id = 0;
		return;
	}
	/* Taken from the end: the group goes first, then its members. */
	for (unsigned i = n; i-- > 0;)
		nl.nh_dels[nl.n_nh_dels++] = a->nh_id - i;
	a->nh_id = 0;
	a->nh_state = RATTR_NH_NONE;
	nl_kick();
}

/* The kernel removed a's objects itself: forget them without deleting anything. */
void
nl_forget_nh_objects(struct rattr *a)
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
		if ((a->nh[i].ifname[0] ? a->nh[i].ifindex : a->nh[i].kifindex) == ifindex) {
			nl_forget_nh_objects(a);
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
nl_on_rattr_free(struct rattr *a)
{
	if (a->nh_dump_only && a->nh_id) {
		/* A dump named it and was thrown away; the routes using it are adopted later. */
		nl_unclaim_old_nh_object(a->nh_id);
		return;
	}
	if (nl.open)
		drop_nh_objects(a);
	else if (a->nh_owner)
		rattr_unref(a->nh_owner);
}

/*
 * Append the messages for r at op to the batch and record them in the window:
 * the nexthop objects the route needs first (when fibd uses them and they are
 * not there yet), then the route. Returns 1 if appended, 0 if it does not fit
 * (nothing appended), -ENODEV if an interface named by a nexthop does not
 * exist now, or -EINPROGRESS if the route waits for its gateways' devices.
 */
static int
build(struct route *r, enum op op)
{
	struct rattr *a = route_want(r);
	size_t room = NL_BATCH_CAP - nl.batch_len;
	bool nhid = op != OP_DEL && wants_nh_object(a), echo = false;
	unsigned objects;

	if (nhid && a->nh_state != RATTR_NH_CREATED) {
		switch (devices_of(a)) {
		case DEV_KNOWN:
			break;
		case DEV_ASKED:
			return -EINPROGRESS;
		case DEV_ASK:
			echo = true; /* this route asks, inline */
			/* fall through */
		case DEV_INLINE:
			nhid = false;
			break;
		}
	}
	objects = nhid && a->nh_state != RATTR_NH_CREATED ? (a->n_nh > 1 ? a->n_nh + 1u : 1u) : 0;

	/*
	 * A route message (256 nexthops at the most) is under KMSG_MAX, and so
	 * is each nexthop object: keep room for all that this route needs.
	 */
	if (room < NL_ROUTE_ROOM(objects))
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
		struct kmsg_key k = kmsg_route_key(r);
		uint32_t seq = ring_push(op, r, op == OP_DEL ? NULL : a, 0, echo);
		nl.batch_len += kmsg_put_route(nl.batch + nl.batch_len, seq,
		    op == OP_DEL ? KMSG_DEL : op == OP_REPLACE ? KMSG_REPLACE : KMSG_ADD_EXCL, &k,
		    nl.protocol, a, (nhid ? KMSG_NH_OBJECT : KMSG_INLINE) | (echo ? KMSG_ECHO : 0));
		if (echo) {
			a->nh_res = RATTR_RES_ASKED;
			a->res_gen = nl.link_gen;
			a->res_seq = seq;
		}
	}
	return 1;
}

/* ---- sending ---- */


/*
 * The kernel refused a whole batch (its send failed with s->err): none of its
 * messages was applied, and no ACK will come for them. The writer thread
 * waits meanwhile, so once the ACKs of the batches before it are read, its
 * messages are the oldest in the window; each fails with the error, as if
 * refused alone, so that its route is parked and retried and its slot is free.
 * Only its messages: those of the batches before and after it are untouched.
 */
static void
refuse_batch(const struct nl_sent *s)
{
	uint32_t k, n, first;

	log_warn_errno(s->err, "nl: the kernel refused a %zu-byte batch of %u messages; "
			       "each fails with this error", s->len, s->msgs);
	nl.st.batches_refused++;
	nl_read_acks(-1);
	k = nl_ring_find(s->first_seq);
	if (k == nl.ring_n)
		return; /* no longer in flight: written again already (lost ACKs) */
	n = s->msgs < nl.ring_n - k ? s->msgs : nl.ring_n - k;
	first = (nl.ring_head + k) % NL_WINDOW_MAX;
	for (uint32_t i = 0; i < n; i++)
		nl_complete(nl.ring[(first + i) % NL_WINDOW_MAX], s->err, "the kernel refused the batch");
	/*
	 * Out of the window with them. Messages before them still waiting for
	 * their ACKs (the kernel queues those inside each send, so only if the
	 * receive budget left some) move up; the ones after were never sent.
	 */
	for (uint32_t j = k; j-- > 0;)
		nl.ring[(nl.ring_head + j + n) % NL_WINDOW_MAX] = nl.ring[(nl.ring_head + j) % NL_WINDOW_MAX];
	nl.ring_head = (nl.ring_head + n) % NL_WINDOW_MAX;
	nl.ring_n -= n;
}

/* The writer thread sent a batch (nl_writer.c), or the kernel refused it. */
void
nl_on_sent(const struct nl_sent *s)
{
	uint64_t t0 = health_cb_begin();

	if (s->send_ns / 1000 > nl.st.send_max_us)
		nl.st.send_max_us = s->send_ns / 1000;
	nl.st.eagain += s->eagain;
	if (s->err) {
		refuse_batch(s);
		nl_writer_resume();
	} else {
		nl.st.batches_sent++;
	}
	if (nl.qhead || nl.batch_len || nl.n_nh_dels)
		nl_kick();
	health_cb_end(t0, "netlink sent");
}

/*
 * Only the batch's last message, and a route written with NLM_F_ECHO, ask for
 * an ACK. The kernel applies the messages of a send in order and answers one
 * that did not ask only if it fails, so the last one's ACK says that every
 * message before it without an answer succeeded (settle_before in nl_ack.c).
 * An ACK a message costs the kernel an answer to build and the loop one to
 * read: with them, fibd took 1.3 times the CPU to install a full table.
 * A lost error does not pass for success: the kernel drops answers only on a
 * receive-buffer overrun and reports it (ENOBUFS) before any later answer is
 * read; everything in flight is written again then, and nothing is sent until
 * the socket has been read empty, which ends the overrun (lose_window).
 */
static void
ask_acks(void)
{
	uint32_t first = nl.ring_head + nl.ring_n - nl.batch_msgs;
	struct nlmsghdr *nlh = (struct nlmsghdr *)nl.batch;
	int left = (int)nl.batch_len;

	for (uint32_t i = 0; i + 1 < nl.batch_msgs && mnl_nlmsg_ok(nlh, left); i++) {
		struct inflight *f = &nl.ring[(first + i) % NL_WINDOW_MAX];
		if (f->seq == nlh->nlmsg_seq && !f->echo) {
			nlh->nlmsg_flags &= (uint16_t)~NLM_F_ACK;
			f->ack = false;
		}
		nlh = mnl_nlmsg_next(nlh, &left);
	}
}

/*
 * Hand the batch being filled to the writer thread. Returns 0 when handed (or
 * nothing to send), -EAGAIN when every slot is busy: the loop goes on when
 * the thread has sent one (nl_on_sent).
 */
static int
flush(void)
{
	if (!nl.batch_len)
		return 0;
	ask_acks();
	if (nl_writer_hand(nl.batch_len, nl.batch_msgs, nl.batch_seq) < 0)
		return -EAGAIN;
	nl.batch = nl_writer_buf();
	nl.batch_len = 0;
	nl.batch_msgs = 0;
	return 0;
}

/*
 * have (a route's attributes as a dump gave them, with the devices the kernel
 * picked) holds a nexthop object an earlier fibd made, and want, a set given
 * by gateways alone, means the same: want uses that object, on those devices,
 * so that neither the routes nor an object are written. have keeps the object
 * (other routes may use it through have) and want holds have, so the object
 * is deleted only when neither set is used any more.
 */
static bool
take_object(struct rattr *have, struct rattr *want)
{
	int oif[PS_NEXTHOPS_MAX];

	if (have->nh_owner)
		have = have->nh_owner;
	if (want->nh_state != RATTR_NH_NONE || want->nh_owner || have->nh_state != RATTR_NH_CREATED ||
	    !have->nh_id || !wants_nh_object(want))
		return false;
	for (unsigned i = 0; i < want->n_nh; i++)
		if (!(oif[i] = (int)if_nametoindex(have->nh[i].ifname)))
			return false;
	for (unsigned i = 0; i < want->n_nh; i++)
		want->nh[i].kifindex = want->nh[i].ifname[0] ? 0 : oif[i];
	want->nh_owner = rattr_ref(have);
	want->nh_id = have->nh_id;
	want->nh_state = RATTR_NH_CREATED;
	want->res_gen = nl.link_gen;
	if (want->nh_res == RATTR_RES_ASKED) {
		/* A route of want's asked meanwhile: the ones waiting for its answer need none. */
		want->nh_res = RATTR_RES_DONE;
		nl_release_resolving(want);
	}
	want->nh_res = RATTR_RES_DONE;
	return true;
}

/*
 * The kernel's route (an adopted one, in the form the dump gave it) already
 * means what the owner wants, as with a route fed without a device that the
 * kernel resolved: take want as have, and write nothing. Not while have holds
 * a nexthop object that want does not use (unless want takes it over):
 * dropping have would delete the object, and with it the route.
 */
static bool
kernel_fulfils(struct route *r)
{
	struct rattr *have = route_have(r), *want = route_want(r);

	if (!have || !want || !rattr_fulfils(have, want) ||
	    (have->nh_id && have->nh_id != want->nh_id && !take_object(have, want)))
		return false;
	route_set_have(r, rattr_ref(want)); /* still installed: the count stays */
	r->flags &= (uint8_t)~R_EXCL;
	return true;
}

/* One writer step: fill and send a batch, bounded by window, bytes and time. */
void
nl_on_kick(uv_idle_t *h)
{
	uint64_t deadline = uv_hrtime() + NL_RUN_NS;
	uint64_t t0 = health_cb_begin();
	bool slots_full = false;
	(void)h;

	/*
	 * After an overrun, the answers of the lost messages are read away first
	 * (lose_window); while some are left, the poll handle reads them, and
	 * kicks again once the queue is empty.
	 */
	if (nl.overrun)
		nl_read_acks(NL_RECV_BUDGET);
	while (!nl.overrun && uv_hrtime() < deadline) {
		uint32_t msgs = 0;
		struct route *r;

		if (flush() < 0) {
			slots_full = true;
			break;
		}
		while (nl.n_nh_dels && nl.ring_n < NL_WINDOW_MAX && nl.batch_len < NL_BATCH_BYTES) {
			uint32_t id = nl.nh_dels[--nl.n_nh_dels];
			nl.batch_len += kmsg_put_nh_del(nl.batch + nl.batch_len,
			    ring_push(OP_NH_DEL, NULL, NULL, id, false), id);
			msgs++;
		}
		for (unsigned looked = 0; nl.ring_n < NL_WINDOW_MAX && (r = nl_dequeue()); looked++) {
			enum op op;
			int rc;
			/* Routes that write nothing (held, waiting, fulfilled) count against the time too. */
			if ((looked & 255) == 255 && uv_hrtime() >= deadline) {
				nl_requeue_head(r);
				break;
			}
			if (r->flags & R_INFLIGHT)
				continue;
			if (r->want == r->have || kernel_fulfils(r)) {
				nl_finish(r, -1, NULL); /* nothing to write after all */
				continue;
			}
			/*
			 * Held: a decoupled table is left alone until couple; no blind
			 * first write, the table's scan comes first (asked for here).
			 */
			if (table_at(r->rt)->decoupled ||
			    (nl.hooks.writable && !nl.hooks.writable(table_at(r->rt)))) {
				nl_hold(r);
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
				nl_requeue_head(r);
				break;
			}
			if (rc == -EINPROGRESS) {
				nl_wait_resolve(r);
				continue;
			}
			if (rc < 0) {
				/* An interface is missing: wait for it like an unreachable nexthop. */
				r->err = ENODEV;
				r->errtext = nl_intern_text("interface does not exist");
				nl_set_state(r, R_WAITING, true);
				nl_park(r);
				nl_finish(r, ENODEV, nl_text(r->errtext));
				continue;
			}
			nl_set_inflight(r, true);
			msgs++;
			if (op == OP_DEL)
				nl.st.deletes++;
			else if (op == OP_REPLACE)
				nl.st.replaces++;
			else
				nl.st.adds++;
			if (nl.batch_len >= NL_BATCH_BYTES)
				break;
		}
		if (!msgs && !nl.batch_len)
			break;
		if (flush() < 0) {
			slots_full = true;
			break;
		}
		if (nl.ring_n >= NL_WINDOW_MAX || !nl.qhead)
			break;
	}
	if (nl.overrun || slots_full ||
	    ((!nl.qhead || nl.ring_n >= NL_WINDOW_MAX) && !nl.batch_len && !nl.n_nh_dels)) {
		uv_idle_stop(&nl.kick);
		nl.kick_on = false;
	}
	health_cb_end(t0, "netlink write");
}

