/*
 * rattr: interned route attributes. Everything of a route but its key and owner
 * (type, nexthops, prefsrc, realm, scope, mtu) is interned once and refcounted,
 * so a route holds one 32-bit id and routes sharing a nexthop set share memory;
 * comparing two routes' attributes is comparing their ids.
 */
#ifndef FIBD_RATTR_H
#define FIBD_RATTR_H

#include <stdbool.h>
#include <stdint.h>

#include <proto-shim/msg.h>

struct rnh {
	union ps_addr gw;
	uint8_t gw_family; /* 0, PS_FAM_V4, PS_FAM_V6 */
	uint8_t flags;     /* PS_NH_* */
	uint16_t weight;
	char ifname[PS_IFNAMSIZ];
	int ifindex;          /* resolved from ifname at link_gen; 0 if unknown */
	uint32_t link_gen;
	/*
	 * A nexthop given by its gateway alone: the device the kernel picked for
	 * it (a nexthop object needs one), as of the rattr's res_gen; 0 if unknown.
	 */
	int kifindex;
};

struct rattr {
	struct rattr *hnext;
	uint32_t hash;
	uint32_t refs;
	uint32_t id; /* what a route holds (rattr_at): never 0 */
	uint8_t family; /* of the route */
	uint8_t type;   /* PS_RT_* */
	uint8_t has;    /* PS_RA_PREFSRC, PS_RA_REALM, PS_RA_SCOPE, PS_RA_MTU */
	uint8_t scope;
	uint16_t n_nh;
	uint32_t realm;
	uint32_t mtu;
	union ps_addr prefsrc;
	/* The kernel nexthop object standing for nh[] (nl.c), when fibd uses them. */
	uint32_t nh_id;   /* the object (a group for ECMP; members are nh_id - n_nh ..) or 0 */
	uint16_t nh_err;  /* errno of its creation when nh_state is RATTR_NH_FAILED */
	uint8_t nh_state; /* RATTR_NH_* */
	uint8_t nh_dump_only; /* nh_id is an earlier fibd's object a dump named, no route holds yet */
	/* The devices of nexthops given by their gateway alone (nl_send.c). */
	uint8_t nh_res;   /* RATTR_RES_* */
	uint32_t res_gen; /* the writer's link generation nh_res holds for */
	uint32_t res_seq; /* the message that asked, while RATTR_RES_ASKED */
	struct route *wait_head, *wait_tail; /* routes waiting for the answer (through qnext) */
	/*
	 * The set whose object nh_id is, when this one uses another's (a gateway-only
	 * set that took over, after a restart, the object of the routes' kernel
	 * form): referenced, so that the object is deleted only when neither is used.
	 */
	struct rattr *nh_owner;
	struct rnh nh[];
};

#define RATTR_NH_NONE 0
#define RATTR_NH_CREATED 1 /* creation sent (the kernel applies messages in order) */
#define RATTR_NH_FAILED 2

#define RATTR_RES_NONE 0
#define RATTR_RES_ASKED 1  /* a route of it was written inline, the kernel asked to echo it */
#define RATTR_RES_DONE 2   /* nh[].kifindex is what the kernel picked */
#define RATTR_RES_FAILED 3 /* the kernel could not resolve them (or its echo was unreadable) */

/*
 * rattr_intern - the interned attributes of a decoded route (validated by
 * proto-shim). Takes a reference: the caller owns one and drops it with
 * rattr_unref. NULL on allocation failure.
 */
struct rattr *rattr_intern(const struct ps_route *r);

/*
 * rattr_unknown - a reference to the marker of attributes in the kernel that
 * fibd could not read (type 0; never freed). NULL on allocation failure.
 */
struct rattr *rattr_unknown(void);

/* The attribute sets by id, [0] NULL: read through rattr_at. */
extern struct rattr **rattr_by_id;

/* rattr_at - the set with this id (0: NULL). */
static inline struct rattr *
rattr_at(uint32_t id)
{
	return id ? rattr_by_id[id] : NULL;
}

/* rattr_id - the id of a (NULL: 0). */
static inline uint32_t
rattr_id(const struct rattr *a)
{
	return a ? a->id : 0;
}

/*
 * rattr_realm - the realm a's routes have in the kernel, 0 for none: an IPv4
 * route's (kept per nexthop); IPv6 drops what is written, and 0 is none.
 */
static inline uint32_t
rattr_realm(const struct rattr *a)
{
	return a->family == PS_FAM_V4 && (a->has & PS_RA_REALM) ? a->realm : 0;
}

/* rattr_ref - another reference to a (possibly NULL) rattr. */
struct rattr *rattr_ref(struct rattr *a);

/* rattr_unref - drop a reference; frees at zero. Accepts NULL; returns NULL. */
struct rattr *rattr_unref(struct rattr *a);

/*
 * rattr_fulfils - whether a route the kernel holds with attributes `have` is
 * what `want` asks for: the same meaning, not the same spelling (docs/design.md,
 * invariant 10). What the kernel fills in where `want` left it out matches: the
 * device it resolved for a nexthop given by its gateway alone, and the default
 * scope (IPv4; IPv6 has none); what it drops where `want` gave it matches too:
 * an IPv6 route's realm, and realm 0 (none). Either may be NULL (then only
 * NULL == NULL).
 */
bool rattr_fulfils(const struct rattr *have, const struct rattr *want);

/*
 * rattr_set_free_hook - called with each rattr just before it is freed (nl.c
 * deletes the kernel nexthop object that stood for it).
 */
void rattr_set_free_hook(void (*hook)(struct rattr *a));

/* rattr_for_each - call cb for every attribute set alive (few: a table walk is cheap). */
void rattr_for_each(void (*cb)(struct rattr *a, void *ctx), void *ctx);

/* Distinct attribute sets alive, and their bytes. */
uint64_t rattr_count(void);
uint64_t rattr_bytes(void);

/* Free the intern table's index (at exit, after every reference is gone). */
void rattr_shutdown(void);

#endif
