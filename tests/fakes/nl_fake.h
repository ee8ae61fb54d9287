#ifndef TEST_NL_FAKE_H
#define TEST_NL_FAKE_H

#include <stdint.h>

/* Writes the fake has performed (routes whose want differed from have). */
extern unsigned fake_nl_writes;
extern unsigned fake_nl_enqueues;

/* The protocol the fake takes for fibd's own (the engine tests use it too). */
#define FAKE_NL_PROTOCOL 12

/* The writer's netlink port the fake says it has (nl_portid). */
#define FAKE_NL_PORTID 4242u

/* Forget the queue (its routes belong to tables a test has shut down). */
void fake_nl_reset(void);

/* Complete every queued write with err (0: success). Returns the routes dequeued. */
unsigned fake_nl_complete(int err);

#endif
