#ifndef TEST_FEED_FAKE_H
#define TEST_FEED_FAKE_H

#include <stdint.h>

/*
 * LEARN messages feed_learn was handed, and refresh marks feed_learn_refresh
 * was, in order (the first 64).
 */
struct fake_learned {
	uint8_t refresh;  /* a mark: enum ps_refresh_phase (then only table and family); 0: a route */
	uint32_t table;
	uint8_t family;
	uint8_t op;       /* PS_LEARN_* */
	uint8_t type;
	uint8_t plen;
	uint8_t protocol;
	uint8_t prefix[16];
	uint32_t metric;
	uint16_t n_nexthops;
};
extern struct fake_learned fake_learned[64];
extern unsigned fake_n_learned;

#endif
