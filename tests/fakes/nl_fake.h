#ifndef TEST_NL_FAKE_H
#define TEST_NL_FAKE_H

#include <stdint.h>

/* Writes the fake has performed (routes whose want differed from have). */
extern unsigned fake_nl_writes;
extern unsigned fake_nl_enqueues;
/* Notifications nl_route_notified was given (sync's replay). */
extern unsigned fake_nl_notified;

/* Monitor overruns so far, as nl_monitor_catch_up reports them (tests raise it). */
extern uint64_t fake_nl_overruns;

/* The protocol the fake takes for fibd's own (the engine tests use it too). */
#define FAKE_NL_PROTOCOL 12

/* Complete every queued write with err (0: success). Returns the routes dequeued. */
unsigned fake_nl_complete(int err);

#endif
