/*
 * nl_ack: the writer's ACKs (nl.c has the queue, nl_send.c builds and sends
 * batches). The kernel answers the messages of one socket in order; each ACK
 * is matched to its message in the window by sequence number, and its outcome
 * lands on the route (installed, removed, parked as waiting or failed) or on
 * the nexthop object it made. Only a batch's last message asks for an ACK:
 * the messages before it with no answer succeeded (settle_before). A route
 * written with NLM_F_ECHO to learn the devices of its gateways asks too, and
 * gets the kernel's copy just before its ACK (handle_echo). Lost ACKs have
 * their messages written again.
 */
#include <errno.h>
#include <string.h>

#include <linux/rtnetlink.h>

#include "health.h"
#include "kmsg.h"
#include "log.h"
#include "nl-internal.h"

static void lose_oldest(uint32_t n);

/* Errors that say a nexthop cannot be reached now: the route waits for a link or an address. */
static bool
unreachable_errno(int err)
{
	return err == ENETUNREACH || err == ENODEV || err == ENETDOWN || err == EHOSTUNREACH;
}

/*
 * The ACK (err) of the message seq that asked for a's devices, and no echo
 * answered before it: the gateway is unreachable (the set is written inline
 * and waits, as its routes do, for a link or an address); or the write said
 * nothing of the gateway (a foreign route on the key; an IPv4 route replaced
 * by an identical one, which the kernel does not echo): the next route asks.
 */
static void
devices_answered(struct rattr *a, uint32_t seq, int err)
{
	if (a->nh_res != RATTR_RES_ASKED || a->res_seq != seq)
		return;
	a->nh_res = unreachable_errno(err) ? RATTR_RES_FAILED : RATTR_RES_NONE;
	a->res_gen = nl.link_gen;
	nl_release_resolving(a);
}


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

/*
 * The outcome of one message that left the window: its ACK (err 0 or a
 * positive errno, text the kernel's extended-ACK message or NULL), or the
 * error of a batch the kernel refused as a whole.
 */
void
nl_complete(struct inflight f, int err, const char *text)
{
	struct ack_attrs aa = { text };
	struct route *r;

	if (f.op == OP_NH_ADD || f.op == OP_NH_DEL) {
		if (f.op == OP_NH_ADD && err && f.sent->nh_state == RATTR_NH_CREATED) {
			/* Routes using it fail too; they report this error, the real cause. */
			f.sent->nh_state = RATTR_NH_FAILED;
			f.sent->nh_err = (uint16_t)err;
			/* Devices the kernel picked may be stale: it is asked again. */
			if (f.sent->nh_res == RATTR_RES_DONE)
				f.sent->nh_res = RATTR_RES_NONE;
		}
		if (err && !(f.op == OP_NH_DEL && err == ENOENT))
			log_debug("nl: nexthop object %u: %s%s%s", f.op == OP_NH_DEL ? f.nh_id : 0,
			    strerror(err), aa.msg ? ": " : "", aa.msg ? aa.msg : "");
		rattr_unref(f.sent);
		return;
	}
	r = f.r;
	nl_set_inflight(r, false);
	if (f.echo)
		devices_answered(f.sent, f.seq, err);
	if (err && f.sent && f.sent->nh_state == RATTR_NH_FAILED && f.sent->nh_err) {
		/* The object could not be made: that is the route's real error. */
		err = f.sent->nh_err;
		aa.msg = "nexthop object could not be made";
	}
	if (f.op == OP_DEL && err == ESRCH)
		err = 0; /* already gone: the delete is done */
	if (!err) {
		table_at(r->rt)->writes++;
		/* Once gone, the key may be taken by a foreign route: add with EXCL again. */
		if (f.op == OP_DEL) {
			if (nl.hooks.deleted)
				nl.hooks.deleted(r);
			nl_set_have(r, NULL);
			r->flags |= R_EXCL;
		} else {
			nl_set_have(r, rattr_ref(f.sent));
			r->flags &= (uint8_t)~R_EXCL;
			r->seen = table_at(r->rt)->epoch; /* the kernel has it as of now */
		}
		r->err = 0;
		r->errtext = 0;
		nl_set_state(r, R_FAILED, false);
		nl_set_state(r, R_WAITING, false);
		if (r->want != r->have)
			nl_enqueue(r);
	} else {
		nl.st.errors++;
		r->err = (uint8_t)(err < 256 ? err : EIO);
		r->errtext = nl_intern_text(aa.msg);
		if (f.sent && f.sent->nh_state == RATTR_NH_CREATED && aa.msg &&
		    !strcmp(aa.msg, "Nexthop id does not exist")) {
			/* The kernel removed the object (its link went down): make a new one. */
			nl_forget_nh_objects(f.sent);
			nl_enqueue(r);
			rattr_unref(f.sent);
			nl_finish(r, -1, NULL);
			return;
		}
		if (err == EEXIST && f.op == OP_ADD_EXCL && nl.hooks.exists)
			nl.hooks.exists(table_at(r->rt)); /* fibd's own, missed by a dump? */
		if (route_want(r) != f.sent) {
			/* It changed meanwhile: write the new state instead of parking. */
			nl_enqueue(r);
		} else {
			nl_set_state(r, unreachable_errno(err) ? R_WAITING : R_FAILED, true);
			nl_park(r);
		}
	}
	rattr_unref(f.sent);
	nl_finish(r, err, nl_text(r->errtext));
}

uint32_t
nl_ring_find(uint32_t seq)
{
	uint32_t k;

	for (k = 0; k < nl.ring_n; k++)
		if (nl.ring[(nl.ring_head + k) % NL_WINDOW_MAX].seq == seq)
			break;
	return k;
}

/* seq is at or before the last sequence number the last overrun gave up (lose_window). */
static bool
given_up(uint32_t seq)
{
	return nl.lost_any && (int32_t)(seq - nl.lost_seq) <= 0;
}

/*
 * An ACK for a message given up as lost in an overrun (lose_window): the
 * batch the writer thread was sending then is applied and answered after
 * the socket was read empty. Its routes were written again, and its objects
 * made again with fresh ids (an object it made stays unused in the kernel
 * until fibd's next start prunes it): not warned of, each one.
 */
static bool
answer_late(uint32_t seq)
{
	if (!given_up(seq))
		return false;
	nl.st.answers_late++;
	return true;
}

/*
 * An answer for seq: settle the messages in flight before it. The kernel
 * answers the messages of one socket in order, and one that did not ask for an
 * ACK only if it failed (ask_acks in nl_send.c): each of those got no answer
 * and succeeded. One that asked and got no ACK was lost (or the kernel
 * misbehaves): it is written again. An answer for no message in flight is
 * ignored (with a warning unless quiet: an echo of a message written again
 * since). Returns true when seq's message is now the oldest.
 */
static bool
settle_before(uint32_t seq, bool quiet)
{
	uint32_t k = nl_ring_find(seq), lost = 0;

	if (k == nl.ring_n) {
		if (!quiet && !answer_late(seq))
			log_warn("nl: ACK for sequence %u matches no message in flight; ignored", seq);
		return false;
	}
	while (k--) {
		struct inflight f = nl.ring[nl.ring_head];
		if (f.ack) {
			lose_oldest(1);
			lost++;
			continue;
		}
		nl.ring_head = (nl.ring_head + 1) % NL_WINDOW_MAX;
		nl.ring_n--;
		nl_complete(f, 0, NULL);
	}
	if (lost)
		log_warn("nl: ACK for sequence %u came before those of %u earlier messages; "
			 "writing those again", seq, lost);
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
	if (nl.ring_n == 0) {
		if (!answer_late(nlh->nlmsg_seq))
			log_warn("nl: ACK for sequence %u with nothing in flight; ignored", nlh->nlmsg_seq);
		return;
	}
	if (nl.ring[nl.ring_head].seq != nlh->nlmsg_seq && !settle_before(nlh->nlmsg_seq, false))
		return;
	f = nl.ring[nl.ring_head];
	nl.ring_head = (nl.ring_head + 1) % NL_WINDOW_MAX;
	nl.ring_n--;
	nl.st.acks++;
	/* The kernel answers in order: no late answer comes after one written since. */
	if (!given_up(f.seq))
		nl.lost_any = false;

	if (e->error && (nlh->nlmsg_flags & NLM_F_ACK_TLVS)) {
		size_t off = sizeof(*e);
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
		if (mnl_nlmsg_size(off) <= nlh->nlmsg_len)
			mnl_attr_parse(nlh, (unsigned)off, ack_attr_cb, &aa);
	}
	nl_complete(f, -e->error, aa.msg);
}

/*
 * The kernel's copy of a route written with NLM_F_ECHO: it comes just before
 * the route's ACK, so its message is the oldest in flight. It names the
 * devices the kernel picked for the gateways (devices_of).
 */
static void
handle_echo(const struct nlmsghdr *nlh)
{
	struct kmsg_rt kr;
	struct inflight *f = &nl.ring[nl.ring_head];
	int oif[NL_RESOLVE_NH_MAX];
	struct rattr *a;

	if (!nl.ring_n || (f->seq != nlh->nlmsg_seq && !settle_before(nlh->nlmsg_seq, true)))
		return;
	f = &nl.ring[nl.ring_head];
	if (!f->echo || !f->sent)
		return;
	a = f->sent;
	if (a->nh_res != RATTR_RES_ASKED || a->res_seq != f->seq)
		return; /* another message asks now, or the set has an object already */
	if (a->res_gen != nl.link_gen) {
		a->nh_res = RATTR_RES_NONE; /* links changed since it asked: ask again */
	} else if (a->n_nh > NL_RESOLVE_NH_MAX || kmsg_rt_parse(nlh, &kr) < 0 ||
	    !kmsg_rt_oifs(&kr, a, oif)) {
		log_warn("nl: the kernel's copy of a route through gateways alone names no device "
			 "for each; such routes are written inline");
		a->nh_res = RATTR_RES_FAILED;
	} else {
		for (unsigned i = 0; i < a->n_nh; i++)
			a->nh[i].kifindex = a->nh[i].ifname[0] ? 0 : oif[i];
		a->nh_res = RATTR_RES_DONE;
		nl.st.gateways_resolved++;
	}
	nl_release_resolving(a);
}

/*
 * The n oldest messages in flight will get no ACK: their routes are written
 * again (an add that did land is replaced by itself; one sent with EXCL may now
 * fail with EEXIST, which the next scan resolves), nexthop objects are made
 * again with fresh ids, and deleted again (a delete of one gone is done).
 */
static void
lose_oldest(uint32_t n)
{
	while (n--) {
		struct inflight *f = &nl.ring[nl.ring_head];
		nl.ring_head = (nl.ring_head + 1) % NL_WINDOW_MAX;
		nl.ring_n--;
		if (f->echo && f->sent->nh_res == RATTR_RES_ASKED && f->sent->res_seq == f->seq) {
			f->sent->nh_res = RATTR_RES_NONE; /* asked again */
			nl_release_resolving(f->sent);
		}
		if (f->r) {
			/* It may have been applied: a write in its table (sync's dump judgement). */
			table_at(f->r->rt)->writes++;
			nl_set_inflight(f->r, false);
			nl_enqueue(f->r);
		} else if (f->sent && f->op == OP_NH_ADD) {
			f->sent->nh_state = RATTR_NH_FAILED; /* made again with fresh ids */
			f->sent->nh_err = 0;
		} else if (f->op == OP_NH_DEL) {
			nl_delete_nh_object(f->nh_id); /* it stayed in the kernel otherwise */
		}
		rattr_unref(f->sent);
	}
}

/*
 * Answers were lost (receive overrun): every message in flight is written
 * again. Not before the socket's queue has been read empty: the kernel reports
 * an overrun once, then drops every answer without a word until a read finds
 * the queue empty, and a batch whose error was dropped so would pass for done
 * once a later ACK came (settle_before). Until then answers are read and
 * thrown away (they are for the messages lost here), and nothing is sent
 * (nl_on_kick).
 */
static void
lose_window(void)
{
	log_warn("nl: answers lost (receive buffer overrun); writing the %u messages in flight again",
	    nl.ring_n);
	nl.overrun = true;
	nl.st.overruns++;
	nl.lost_any = true;
	nl.lost_seq = nl.seq;
	/* Batches not sent yet are in the window too: they are built again. */
	nl_writer_cancel_queued();
	nl.batch = nl_writer_buf();
	nl.batch_len = 0;
	nl.batch_msgs = 0;
	lose_oldest(nl.ring_n);
}

/* The socket's queue was read empty after an overrun: the kernel answers again. */
static void
drained(void)
{
	if (!nl.overrun)
		return;
	nl.overrun = false;
	nl_kick();
}

/*
 * Read answers: budget recvmmsg calls of up to NL_MMSG datagrams each (every
 * answer is a datagram of its own), or all there are when budget is negative.
 * A read of fewer than NL_MMSG found the queue empty, or met an overrun, which
 * the next read reports.
 */
void
nl_read_acks(int budget)
{
	for (int i = 0; budget < 0 || i < budget; i++) {
		int n = nl_io_recvmmsg(nl.mm.hdr, NL_MMSG);
		if (n < 0) {
			if (errno == ENOBUFS) {
				lose_window();
				/* Read on: the queue may hold nothing more, and no poll would say so. */
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				drained();
			break;
		}
		for (int k = 0; k < n; k++) {
			const struct nlmsghdr *nlh = (const struct nlmsghdr *)nl.mm.buf[k];
			int len = (int)nl.mm.hdr[k].msg_len;
			if (nl.mm.hdr[k].msg_hdr.msg_flags & MSG_TRUNC)
				log_warn("nl: an ACK was truncated to %d bytes", len);
			for (; !nl.overrun && kmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len))
				if (nlh->nlmsg_type == NLMSG_ERROR)
					handle_ack(nlh);
				else if (nlh->nlmsg_type == RTM_NEWROUTE)
					handle_echo(nlh);
			nl.mm.hdr[k].msg_len = 0;
		}
		if (n < NL_MMSG) {
			drained();
			break;
		}
	}
}

void
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
		uv_poll_start(&nl.wr_poll, UV_READABLE, nl_on_wr);
		events = UV_READABLE;
	}
	if (events & UV_READABLE)
		nl_read_acks(NL_RECV_BUDGET);
	if (nl.qhead && nl.ring_n < NL_WINDOW_MAX)
		nl_kick();
	health_cb_end(t0, "netlink ACKs");
}

