/* Route dump datagrams built the way the kernel sends them (nlbuild.h). */
#include <arpa/inet.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "nlbuild.h"

void
nlb_route(struct nlbuild *b, int family, const char *dst, unsigned plen, uint32_t table,
    uint8_t proto, uint32_t metric, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(b->buf + b->len);
	struct rtmsg *rtm;
	uint8_t addr[16];

	nlh->nlmsg_type = RTM_NEWROUTE;
	nlh->nlmsg_flags = NLM_F_MULTI | flags;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)family;
	rtm->rtm_dst_len = (uint8_t)plen;
	rtm->rtm_table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC;
	rtm->rtm_protocol = proto;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put_u32(nlh, RTA_TABLE, table);
	if (plen) {
		inet_pton(family, dst, addr);
		mnl_attr_put(nlh, RTA_DST, family == AF_INET ? 4 : 16, addr);
	}
	if (metric)
		mnl_attr_put_u32(nlh, RTA_PRIORITY, metric);
	b->len += NLMSG_ALIGN(nlh->nlmsg_len);
}

void
nlb_done(struct nlbuild *b, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(b->buf + b->len);
	int zero = 0;

	nlh->nlmsg_type = NLMSG_DONE;
	nlh->nlmsg_flags = NLM_F_MULTI | flags;
	memcpy(mnl_nlmsg_put_extra_header(nlh, sizeof(zero)), &zero, sizeof(zero));
	b->len += NLMSG_ALIGN(nlh->nlmsg_len);
}
