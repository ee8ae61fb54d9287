/*
 * The few names of BIRD's nest/bird.h that bird-glue's pending set uses, for
 * its unit test outside BIRD (tests/unit/bird-glue/test_pending.c).
 */
#ifndef FAKE_BIRD_NEST_BIRD_H
#define FAKE_BIRD_NEST_BIRD_H

#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef uint8_t byte;
typedef unsigned int uint;

/* BIRD's fatal error: here an abort, with the message on stderr. */
void die(const char *msg, ...) __attribute__((noreturn, format(printf, 1, 2)));

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
