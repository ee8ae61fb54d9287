/* kfake: the fake kernel, under the writer's socket (kfake.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "kfake.h"
#include "nl.h"

/* ---- writer ---- */

#define KF_MSGS 16384

unsigned kf_nl_sends;
int kf_nl_send_errno;
static unsigned errno_at, errno_at_err, tries;

void
kf_nl_send_errno_at(unsigned n, int err)
{
	errno_at = n;
	errno_at_err = err;
	tries = 0;
}

/* Held sends wait (in the writer thread) until released: a kernel slow to apply a batch. */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static bool held;
static unsigned waiting;

void
kf_nl_hold(bool on)
{
	pthread_mutex_lock(&hold_mu);
	held = on;
	pthread_cond_broadcast(&hold_cv);
	pthread_mutex_unlock(&hold_mu);
}

unsigned
kf_nl_held_sends(void)
{
	unsigned n;

	pthread_mutex_lock(&hold_mu);
	n = waiting;
	pthread_mutex_unlock(&hold_mu);
	return n;
}

#define KF_MSG_KEEP 512 /* bytes of each message kept (for kf_nl_msg and kf_nl_echo) */

static struct {
	uint16_t type;
	uint32_t seq;
	struct nlmsghdr hdr; /* echoed in the ACK, as with NETLINK_CAP_ACK */
	_Alignas(8) char msg[KF_MSG_KEEP];
} msgs[KF_MSGS];
static unsigned n_msgs;
/* Datagrams waiting to be read: ACKs and echoes */
static struct {
	_Alignas(8) char buf[KF_MSG_KEEP + 64];
	size_t len;
} acks[KF_MSGS];
static unsigned n_acks, at_acks;
/* An overrun: reported once (ENOBUFS), then answers are dropped until a read finds the queue empty. */
static bool overrun_report, congested;

void
kf_nl_overrun(void)
{
	overrun_report = congested = true;
}

static ssize_t
nl_send(const void *buf, size_t len)
{
	const struct nlmsghdr *nlh = buf;
	int left = (int)len;

	pthread_mutex_lock(&hold_mu);
	waiting++;
	while (held)
		pthread_cond_wait(&hold_cv, &hold_mu);
	waiting--;
	pthread_mutex_unlock(&hold_mu);
	if (errno_at && ++tries == errno_at) {
		errno_at = 0;
		errno = errno_at_err;
		return -1;
	}
	if (kf_nl_send_errno) {
		errno = kf_nl_send_errno;
		kf_nl_send_errno = 0;
		return -1;
	}
	kf_nl_sends++;
	for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		if (n_msgs == KF_MSGS)
			break;
		msgs[n_msgs].type = nlh->nlmsg_type;
		msgs[n_msgs].seq = nlh->nlmsg_seq;
		msgs[n_msgs].hdr = *nlh;
		memcpy(msgs[n_msgs].msg, nlh, nlh->nlmsg_len < KF_MSG_KEEP ? nlh->nlmsg_len : KF_MSG_KEEP);
		n_msgs++;
	}
	return (ssize_t)len;
}

static int
nl_recvmmsg(struct mmsghdr *mm, unsigned n)
{
	unsigned k = 0;

	if (overrun_report) {
		overrun_report = false;
		errno = ENOBUFS;
		return -1;
	}
	for (; k < n && at_acks < n_acks; k++, at_acks++) {
		memcpy(mm[k].msg_hdr.msg_iov[0].iov_base, acks[at_acks].buf, acks[at_acks].len);
		mm[k].msg_len = (unsigned)acks[at_acks].len;
		mm[k].msg_hdr.msg_flags = 0;
	}
	if (at_acks == n_acks) {
		n_acks = at_acks = 0;
		congested = false;
	}
	if (!k) {
		errno = EAGAIN;
		return -1;
	}
	return (int)k;
}

void
kf_nl_install(void)
{
	n_msgs = n_acks = at_acks = 0;
	overrun_report = congested = false;
	kf_nl_sends = 0;
	kf_nl_send_errno = 0;
	errno_at = 0;
	nl_set_io(nl_send, nl_recvmmsg);
}

void
kf_nl_uninstall(void)
{
	nl_set_io(NULL, NULL);
}

unsigned
kf_nl_unanswered(void)
{
	return n_msgs;
}

uint16_t
kf_nl_type(unsigned i)
{
	return msgs[i].type;
}

uint32_t
kf_nl_seq(unsigned i)
{
	return msgs[i].seq;
}

const struct nlmsghdr *
kf_nl_msg(unsigned i)
{
	return (const struct nlmsghdr *)msgs[i].msg;
}

void
kf_nl_echo(unsigned i, int oif)
{
	const struct nlmsghdr *sent = (const struct nlmsghdr *)msgs[i].msg;
	struct nlmsghdr *nlh = (struct nlmsghdr *)acks[n_acks].buf;

	if (congested)
		return;
	memcpy(nlh, sent, sent->nlmsg_len);
	nlh->nlmsg_flags = 0;
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)oif);
	acks[n_acks++].len = nlh->nlmsg_len;
}

/* Answer message i: as the kernel does, only if it asked for an ACK or failed. */
static void
ack_one(unsigned i, int err)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(acks[n_acks].buf);
	struct nlmsgerr *e;

	if ((!err && !(msgs[i].hdr.nlmsg_flags & NLM_F_ACK)) || congested)
		return;
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_seq = msgs[i].seq;
	nlh->nlmsg_flags = NLM_F_CAPPED;
	e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
	e->error = -err;
	e->msg = msgs[i].hdr;
	acks[n_acks++].len = nlh->nlmsg_len;
}

static void
drop(unsigned i)
{
	memmove(&msgs[i], &msgs[i + 1], (n_msgs - i - 1) * sizeof(msgs[0]));
	n_msgs--;
}

void
kf_nl_ack(unsigned n, int err)
{
	for (unsigned i = 0; i < n && n_msgs; i++) {
		ack_one(0, err);
		drop(0);
	}
}

void
kf_nl_ack_seq(uint32_t seq, int err)
{
	for (unsigned i = 0; i < n_msgs; i++)
		if (msgs[i].seq == seq) {
			ack_one(i, err);
			drop(i);
			return;
		}
}
