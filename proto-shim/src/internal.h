/*
 * proto-shim internals shared by the validator, encoder and decoder: the body
 * keys of every message (docs/PROTOCOL.md lists them) and the fault helper.
 */
#ifndef PROTO_SHIM_INTERNAL_H
#define PROTO_SHIM_INTERNAL_H

#include <stdarg.h>

#include <proto-shim/msg.h>

/* HELLO */
#define K_HELLO_VERSIONS 1
#define K_HELLO_ROLE 2
#define K_HELLO_NAME 3
#define K_HELLO_TABLE 4
#define K_HELLO_FAMILIES 5
#define K_HELLO_METRIC 6
#define K_HELLO_PROTOCOL 7
#define K_HELLO_STALE 8
#define K_HELLO_PERSIST 9
#define K_HELLO_LEARN 10
#define K_HELLO_RESULTS 11
#define K_HELLO_REFRESH 12
/* WELCOME */
#define K_WELCOME_VERSION 1
#define K_WELCOME_SERVER_ID 2
#define K_WELCOME_EPOCH 3
/* ERROR, CTL_END (code and text share their keys with ERROR) */
#define K_ERROR_CODE 1
#define K_ERROR_FIELD 2
#define K_ERROR_TEXT 3
/* PING, PONG, BYE, FEED_BEGIN, FEED_END, REFEED: a single field */
#define K_SINGLE 1
/* ROUTE, WITHDRAW, LEARN, and the key part of a ROUTE_STATUS result */
#define K_RT_TABLE 1
#define K_RT_FAMILY 2
#define K_RT_PREFIX 3
#define K_RT_PLEN 4
#define K_RT_TOS 5
#define K_RT_METRIC 6
#define K_RT_TYPE 7
#define K_RT_NEXTHOPS 8
#define K_RT_PREFSRC 9
#define K_RT_REALM 10
#define K_RT_SCOPE 11
#define K_RT_MTU 12
#define K_RT_PROTOCOL 13
#define K_RT_OP 14
/* a nexthop map */
#define K_NH_GATEWAY 1
#define K_NH_IFNAME 2
#define K_NH_WEIGHT 3
#define K_NH_FLAGS 4
/* ROUTE_STATUS */
#define K_STATUS_RESULTS 1
#define K_STATUS_INSTALLED 2
#define K_STATUS_REMOVED 3
#define K_ST_STATE 7
#define K_ST_ERRNO 8
#define K_ST_TEXT 9
/* LEARN_REFRESH */
#define K_REFRESH_TABLE 1
#define K_REFRESH_FAMILY 2
#define K_REFRESH_PHASE 3
/* CTL_REQUEST, CTL_CHUNK, CTL_END */
#define K_CTL_REQ 1
#define K_CTL_CMD 2
#define K_CTL_ARGS 3
#define K_CTL_FLAGS 4
#define K_CHUNK_DATA 2
#define K_END_CODE 2
#define K_END_TEXT 3

/* Keys below this are tracked for duplicates; larger ones are unknown and skipped. */
#define K_TRACKED 64

__attribute__((format(printf, 4, 5))) int ps_fault_set(struct ps_fault *f, int code,
    const char *field, const char *fmt, ...);

/* Address length in bytes for a wire family, 0 for an unknown family. */
static inline unsigned
ps_fam_len(unsigned fam)
{
	return fam == PS_FAM_V4 ? 4 : fam == PS_FAM_V6 ? 16 : 0;
}

#endif
