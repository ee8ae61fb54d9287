/* kfake: the fake kernel, under the dump socket (kfake.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "dump.h"
#include "kfake.h"

/* ---- dump ---- */

#define KF_SCRIPT 32

unsigned kf_dump_requests;
uint32_t kf_dump_last_table;
uint8_t kf_dump_last_protocol;
int kf_dump_send_errno;

static uint32_t last_seq;
static struct {
	struct nlbuild b;
	int err;
	bool as;
	uint32_t seq_delta, portid;
} script[KF_SCRIPT];
static unsigned n_script, at_script;

static ssize_t
dump_send(const void *buf, size_t len)
{
	const struct nlmsghdr *nlh = buf;
	const struct nlattr *a;

	if (kf_dump_send_errno) {
		errno = kf_dump_send_errno;
		kf_dump_send_errno = 0;
		return -1;
	}
	kf_dump_requests++;
	last_seq = nlh->nlmsg_seq;
	kf_dump_last_protocol = ((const struct rtmsg *)mnl_nlmsg_get_payload(nlh))->rtm_protocol;
	mnl_attr_for_each(a, nlh, sizeof(struct rtmsg))
		if (mnl_attr_get_type(a) == RTA_TABLE)
			kf_dump_last_table = mnl_attr_get_u32(a);
	return (ssize_t)len;
}

static ssize_t
dump_recv(void *buf, size_t len)
{
	struct nlmsghdr *nlh;
	int left;

	if (at_script == n_script) {
		errno = EAGAIN;
		return -1;
	}
	if (script[at_script].err) {
		errno = script[at_script++].err;
		return -1;
	}
	if (script[at_script].b.len > len) {
		errno = EMSGSIZE;
		return -1;
	}
	memcpy(buf, script[at_script].b.buf, script[at_script].b.len);
	left = (int)script[at_script].b.len;
	for (nlh = buf; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		nlh->nlmsg_seq = last_seq + (script[at_script].as ? script[at_script].seq_delta : 0);
		nlh->nlmsg_pid = script[at_script].as ? script[at_script].portid : dump_portid();
	}
	return (ssize_t)script[at_script++].b.len;
}

void
kf_dump_install(void)
{
	n_script = at_script = 0;
	kf_dump_requests = 0;
	kf_dump_send_errno = 0;
	dump_set_io(dump_send, dump_recv);
}

void
kf_dump_uninstall(void)
{
	dump_set_io(NULL, NULL);
}

static struct nlbuild *
next(bool as, uint32_t seq_delta, uint32_t portid)
{
	if (n_script == KF_SCRIPT) { /* a test that scripts more than it reads */
		n_script = at_script = 0;
	}
	memset(&script[n_script], 0, sizeof(script[0]));
	script[n_script].as = as;
	script[n_script].seq_delta = seq_delta;
	script[n_script].portid = portid;
	return &script[n_script++].b;
}

struct nlbuild *
kf_dump_reply(void)
{
	return next(false, 0, 0);
}

struct nlbuild *
kf_dump_reply_as(uint32_t seq_delta, uint32_t portid)
{
	return next(true, seq_delta, portid);
}

void
kf_dump_fail(int err)
{
	next(false, 0, 0);
	script[n_script - 1].err = err;
}

unsigned
kf_dump_pending(void)
{
	return n_script - at_script;
}

