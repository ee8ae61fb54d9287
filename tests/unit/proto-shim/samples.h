/*
 * Sample messages with edge values, one or more of every type, shared by the
 * codec tests and the fuzz seed writer. Each sample is heap-allocated (struct
 * ps_msg is large) and freed by samples_free.
 */
#ifndef TEST_SAMPLES_H
#define TEST_SAMPLES_H

#include <proto-shim/msg.h>

#define SAMPLES_MAX 64

struct samples {
	unsigned n;
	struct ps_msg *m[SAMPLES_MAX];
	const char *name[SAMPLES_MAX];
	char *storage; /* text the messages' ps_str views point into */
};

void samples_make(struct samples *s);
void samples_free(struct samples *s);

/* A plain unicast route with one gateway nexthop (helper for tests). */
void sample_route_v4(struct ps_msg *m, const char *prefix, unsigned plen, const char *gw,
    const char *dev);

#endif
