#ifndef TEST_NL_FAKE_H
#define TEST_NL_FAKE_H

/* Writes the fake has performed (routes whose want differed from have). */
extern unsigned fake_nl_writes;
extern unsigned fake_nl_enqueues;

/* Complete every queued write with err (0: success). Returns the routes dequeued. */
unsigned fake_nl_complete(int err);

#endif
