/*
 * nlwriter: the kernel's own limit for installing routes, as a reference for
 * bench/feed.sh. Nothing but the writing: routes are parsed and their netlink
 * messages built before the clock starts; then batches of messages go out with
 * one send each, with a window of messages in flight. Only a batch's last
 * message asks for an ACK (the kernel answers the others only if they fail),
 * as fibd does; --ack-each has every message ask, as fibd did before.
 *
 *   nlwriter [--nhid] [--ack-each] [--batch N] [--window N] [--table N] FILE
 *
 * FILE holds `PREFIX via GW dev DEV` lines (bench/feed.sh's route set). With
 * --nhid, one kernel nexthop object is made per distinct (gw, dev) first (not
 * timed) and routes refer to it by id. Prints one line of figures.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>

#include "parser.h"

#define MSG_MAX 256

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct nhobj {
	union ps_addr gw;
	uint8_t fam;
	int ifindex;
	uint32_t id;
};

static struct nhobj nhs[1024];
static unsigned n_nhs;

static uint32_t
nh_id(const struct ps_nexthop *nh, int ifindex)
{
	for (unsigned i = 0; i < n_nhs; i++)
		if (nhs[i].fam == nh->gw_family && nhs[i].ifindex == ifindex &&
		    !memcmp(nhs[i].gw.b, nh->gw.b, 16))
			return nhs[i].id;
	if (n_nhs == sizeof(nhs) / sizeof(nhs[0])) {
		fprintf(stderr, "nlwriter: too many distinct nexthops\n");
		exit(1);
	}
	nhs[n_nhs].gw = nh->gw;
	nhs[n_nhs].fam = nh->gw_family;
	nhs[n_nhs].ifindex = ifindex;
	nhs[n_nhs].id = 1000 + n_nhs;
	return nhs[n_nhs++].id;
}

/* Send one message and wait for its ACK (setup only). */
static int
request(struct mnl_socket *s, struct nlmsghdr *nlh)
{
	_Alignas(8) char buf[8192];
	ssize_t n;

	nlh->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(s, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	n = mnl_socket_recvfrom(s, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	return mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, mnl_socket_get_portid(s), NULL, NULL) < 0
	    ? -errno
	    : 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "nhid", no_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'b' },
		{ "window", required_argument, NULL, 'w' },
		{ "table", required_argument, NULL, 't' },
		{ "ack-each", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned batch = 256, window = 4096, table = 100;
	int use_nhid = 0, ack_each = 0, o;
	static struct ps_msg m;
	struct mnl_socket *s;
	static _Alignas(8) char rx[65536];
	char *msgs, *line = NULL;
	size_t cap = 0, used = 0, *offs = NULL, n_msgs = 0, line_cap = 0;
	uint32_t seq = 1;
	FILE *f;
	double t0, t1, send_max = 0;
	size_t sent = 0, acked = 0, errors = 0;
	int first_error = 0;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'n':
			use_nhid = 1;
			break;
		case 'b':
			batch = (unsigned)atoi(optarg);
			break;
		case 'w':
			window = (unsigned)atoi(optarg);
			break;
		case 'a':
			ack_each = 1;
			break;
		case 't':
			table = (unsigned)atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind != argc - 1 || !(f = fopen(argv[optind], "r"))) {
		fprintf(stderr, "usage: nlwriter [--nhid] [--ack-each] [--batch N] [--window N] [--table N] FILE\n");
		return 2;
	}
	s = mnl_socket_open(NETLINK_ROUTE);
	if (!s || mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
		perror("nlwriter: netlink");
		return 1;
	}
	{
		int one = 1, size = 32 << 20;
		mnl_socket_setsockopt(s, NETLINK_CAP_ACK, &one, sizeof(one));
		setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
	}

	/* Build every message before the clock starts. */
	msgs = malloc(cap = 64 << 20);
	while (getline(&line, &line_cap, f) >= 0) {
		char err[256];
		struct nlmsghdr *nlh;
		struct rtmsg *rtm;
		const struct ps_route *r = &m.u.route;
		int ifindex;

		if (parse_route_line(line, &m, err, sizeof(err)) != 0)
			continue;
		if (cap - used < MSG_MAX) {
			msgs = realloc(msgs, cap *= 2);
		}
		if (n_msgs % 65536 == 0)
			offs = realloc(offs, (n_msgs + 65536) * sizeof(*offs));
		offs[n_msgs++] = used;
		nlh = mnl_nlmsg_put_header(msgs + used);
		nlh->nlmsg_type = RTM_NEWROUTE;
		nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
		nlh->nlmsg_seq = seq++;
		rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
		rtm->rtm_family = r->key.family == PS_FAM_V4 ? AF_INET : AF_INET6;
		rtm->rtm_dst_len = r->key.plen;
		rtm->rtm_table = RT_TABLE_UNSPEC;
		rtm->rtm_protocol = 12;
		rtm->rtm_scope = RT_SCOPE_UNIVERSE;
		rtm->rtm_type = RTN_UNICAST;
		mnl_attr_put_u32(nlh, RTA_TABLE, table);
		mnl_attr_put(nlh, RTA_DST, r->key.family == PS_FAM_V4 ? 4 : 16, r->key.prefix.b);
		ifindex = (int)if_nametoindex(r->nh[0].ifname);
		if (use_nhid) {
			mnl_attr_put_u32(nlh, RTA_NH_ID, nh_id(&r->nh[0], ifindex));
		} else {
			mnl_attr_put(nlh, RTA_GATEWAY, r->nh[0].gw_family == PS_FAM_V4 ? 4 : 16,
			    r->nh[0].gw.b);
			mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
		}
		used += nlh->nlmsg_len;
	}
	fclose(f);
	free(line);

	/* Nexthop objects (setup, not timed). */
	for (unsigned i = 0; i < n_nhs; i++) {
		_Alignas(8) char buf[512];
		struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
		struct nhmsg *nhm;
		int rc;
		nlh->nlmsg_type = RTM_NEWNEXTHOP;
		nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE;
		nlh->nlmsg_seq = seq++;
		nhm = mnl_nlmsg_put_extra_header(nlh, sizeof(*nhm));
		nhm->nh_family = nhs[i].fam == PS_FAM_V4 ? AF_INET : AF_INET6;
		nhm->nh_protocol = 12;
		mnl_attr_put_u32(nlh, NHA_ID, nhs[i].id);
		mnl_attr_put_u32(nlh, NHA_OIF, (uint32_t)nhs[i].ifindex);
		mnl_attr_put(nlh, NHA_GATEWAY, nhs[i].fam == PS_FAM_V4 ? 4 : 16, nhs[i].gw.b);
		if ((rc = request(s, nlh)) < 0) {
			fprintf(stderr, "nlwriter: nexthop object %u: %s\n", nhs[i].id, strerror(-rc));
			return 1;
		}
	}

	if (!ack_each)
		for (size_t i = 0; i < n_msgs; i++)
			if ((i + 1) % batch && i + 1 != n_msgs)
				((struct nlmsghdr *)(msgs + offs[i]))->nlmsg_flags &= (uint16_t)~NLM_F_ACK;
	t0 = now_s();
	while (acked < n_msgs) {
		if (sent < n_msgs && sent - acked + batch <= window) {
			size_t last = sent + batch < n_msgs ? sent + batch : n_msgs;
			size_t end = last < n_msgs ? offs[last] : used;
			double ts = now_s(), dt;
			if (mnl_socket_sendto(s, msgs + offs[sent], end - offs[sent]) < 0) {
				perror("nlwriter: send");
				return 1;
			}
			dt = now_s() - ts;
			if (dt > send_max)
				send_max = dt;
			sent = last;
			continue;
		}
		{
			ssize_t n = mnl_socket_recvfrom(s, rx, sizeof(rx));
			const struct nlmsghdr *nlh;
			int len;
			if (n < 0) {
				perror("nlwriter: recv");
				return 1;
			}
			len = (int)n;
			for (nlh = (const struct nlmsghdr *)rx; mnl_nlmsg_ok(nlh, len);
			     nlh = mnl_nlmsg_next(nlh, &len)) {
				if (nlh->nlmsg_type != NLMSG_ERROR)
					continue;
				/* The answer settles every message up to it (sequence numbers start at 1). */
				if (nlh->nlmsg_seq <= n_msgs && nlh->nlmsg_seq > acked)
					acked = nlh->nlmsg_seq;
				if (((const struct nlmsgerr *)mnl_nlmsg_get_payload(nlh))->error) {
					errors++;
					if (!first_error)
						first_error = -((const struct nlmsgerr *)mnl_nlmsg_get_payload(nlh))->error;
				}
			}
		}
	}
	t1 = now_s();
	printf("nlwriter %s%s: %zu routes in %.3f s, %.0f routes/s, %zu errors%s%s, longest send %.1f ms\n",
	    use_nhid ? "nexthop objects" : "inline nexthops", ack_each ? ", an ACK each" : "",
	    n_msgs, t1 - t0, n_msgs / (t1 - t0),
	    errors, first_error ? ": " : "", first_error ? strerror(first_error) : "",
	    send_max * 1e3);
	mnl_socket_close(s);
	free(msgs);
	free(offs);
	return errors ? 1 : 0;
}
