/*
 * format: routes as text, for fibctl's answers and the watch stream, and as the
 * binary dump's records. A route in ip route syntax is what `fibctl feed` takes
 * back, so dump's text round-trips.
 */
#ifndef FIBD_FORMAT_H
#define FIBD_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <proto-shim/msg.h>

#include "rattr.h"

/* A growing text buffer; `failed` is set once an allocation fails (later writes do nothing). */
struct text {
	char *p;
	size_t len, cap;
	int failed;
};

void tprintf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A JSON string: escapes quotes, backslashes and control characters. */
void json_str(struct text *t, const char *s);

/* json_str, or null for NULL. */
void json_str_or_null(struct text *t, const char *s);

/* An address of family fam (PS_FAM_V4, PS_FAM_V6). */
void put_addr(struct text *t, uint8_t fam, const union ps_addr *a);

/* A route's key as JSON members: "prefix":"P/L","table":N,"family":F,"metric":M,"tos":T. */
void put_key_json(struct text *t, uint8_t fam, uint32_t table, const union ps_addr *prefix,
    uint8_t plen, uint8_t tos, uint32_t metric);

/*
 * A route's error: "strerror(err): text", either part alone when the other is
 * missing; put_error_json gives it as a JSON string (the kernel's text if
 * any, else strerror), or null when there is none.
 */
void put_error(struct text *t, int err, const char *text);
void put_error_json(struct text *t, int err, const char *text);

/* "unicast", "blackhole", "unreachable", "prohibit" (PS_RT_*), or "?". */
const char *type_name(uint8_t type);

/*
 * put_attrs - a route's attributes in ip route syntax as they follow the
 * prefix (" via 192.0.2.1 dev eth0 src ... mtu ..."), each with a space before;
 * the type goes before the prefix in that syntax, so it is left out.
 */
void put_attrs(struct text *t, const struct rattr *a);

/* put_attrs_json - {"type": ..., "route": "via ... dev ..."}, or null. */
void put_attrs_json(struct text *t, const struct rattr *a);

/*
 * put_route - one route as a line of ip route syntax (no newline): [type]
 * prefix/plen attributes table N metric M [tos T]. a may be NULL (the key only).
 */
void put_route(struct text *t, uint8_t fam, const union ps_addr *prefix, uint8_t plen,
    const struct rattr *a, uint32_t table, uint32_t metric, uint8_t tos);

/*
 * The binary dump (docs/PROTOCOL.md, "Binary dump", version 2): its header, a
 * route's record (what its client wants, and its state), and the trailer with
 * the number of records before it. t->failed on no memory.
 */
struct rtable;
struct route;
void put_bin_header(struct text *t);
void put_bin_route(struct text *t, const struct rtable *rt, const struct route *r);
void put_bin_trailer(struct text *t, uint64_t records);

#endif
