#ifndef TEST_NLBUILD_H
#define TEST_NLBUILD_H

/* Route dump datagrams built the way the kernel sends them, for unit tests. */

#include <stddef.h>
#include <stdint.h>

struct nlbuild {
	_Alignas(8) char buf[16384];
	size_t len;
};

/* Append an RTM_NEWROUTE (unicast; dst "" for a default route; metric 0: none). */
void nlb_route(struct nlbuild *b, int family, const char *dst, unsigned plen, uint32_t table,
    uint8_t proto, uint32_t metric, uint16_t flags);

/* Append NLMSG_DONE. */
void nlb_done(struct nlbuild *b, uint16_t flags);

#endif
