/*
 * proto-shim: the messages that bird-glue, fibd and fibctl exchange.
 *
 * A message on the wire is a msgpack array [type, body], body a map with small
 * unsigned integer keys (docs/PROTOCOL.md). In memory it is one struct ps_msg:
 * a type and a union of plain bodies. Optional fields carry a presence bit so
 * that "absent" (take the session default) differs from "zero".
 *
 * Strings and byte strings that can be long (error text, extended-ACK text,
 * control arguments and chunk data) are struct ps_str views. After decoding they
 * are borrowed from the decoder's buffer (see dec.h); when encoding, the caller
 * owns them. Short names (client name, interface names) are copied into fixed,
 * NUL-terminated arrays so that callers can keep them without thinking.
 *
 * This library never logs and has no event-loop dependency: it links into BIRD.
 */
#ifndef PROTO_SHIM_MSG_H
#define PROTO_SHIM_MSG_H

#include <stddef.h>
#include <stdint.h>

#if defined(PS_BUILDING)
#define PS_EXPORT __attribute__((visibility("default")))
#else
#define PS_EXPORT
#endif

/* Protocol versions this library speaks. */
#define PS_VERSION_MIN 1
#define PS_VERSION_MAX 1

/* Limits. Every count and length on the wire is checked against these before use. */
#define PS_MSG_MAX_DEFAULT (1024 * 1024) /* bytes in one encoded message */
#define PS_MSG_MAX_FLOOR 4096            /* the smallest limit a decoder accepts */
#define PS_DEPTH_MAX 6                   /* nesting of arrays and maps */
#define PS_VERSIONS_MAX 16
#define PS_NAME_MAX 64           /* client name and server id, bytes */
#define PS_IFNAMSIZ 16           /* as the kernel's IFNAMSIZ: at most 15 bytes + NUL */
#define PS_NEXTHOPS_MAX 256
#define PS_WEIGHT_MAX 256
#define PS_STATUS_MAX 256        /* results in one ROUTE_STATUS */
#define PS_TEXT_MAX 1024         /* error message, extended-ACK text, reasons */
#define PS_FIELD_MAX 32          /* the field name in an ERROR */
#define PS_CTL_CMD_MAX 32
#define PS_CTL_ARGS_MAX 32
#define PS_CTL_ARG_MAX 256
#define PS_CHUNK_MAX (256 * 1024)
#define PS_STALE_TIME_MAX 604800 /* seconds: one week */

enum ps_type {
	PS_HELLO = 1,
	PS_WELCOME = 2,
	PS_ERROR = 3,
	PS_PING = 4,
	PS_PONG = 5,
	PS_BYE = 6,
	PS_ROUTE = 10,
	PS_WITHDRAW = 11,
	PS_FEED_BEGIN = 12,
	PS_FEED_END = 13,
	PS_ROUTE_STATUS = 20,
	PS_LEARN = 21,
	PS_REFEED = 22,
	PS_LEARN_REFRESH = 23,
	PS_CTL_REQUEST = 30,
	PS_CTL_CHUNK = 31,
	PS_CTL_END = 32,
};

/* Error codes carried in ERROR and CTL_END, and reported by the decoder. */
enum ps_err {
	PS_E_OK = 0,
	PS_E_MALFORMED = 1,    /* not msgpack, or not [type, body] */
	PS_E_TOO_LARGE = 2,    /* message over the size limit */
	PS_E_UNKNOWN_TYPE = 3, /* message type not known in the negotiated version */
	PS_E_FIELD = 4,        /* a field is missing, of the wrong type or out of range */
	PS_E_VERSION = 5,      /* no common protocol version */
	PS_E_STATE = 6,        /* message not allowed in the session's state */
	PS_E_CONFLICT = 7,     /* the client name is in use by a connected session */
	PS_E_DENIED = 8,       /* not permitted for this peer */
	PS_E_LIMIT = 9,        /* a server-side resource limit was hit */
	PS_E_INTERNAL = 10,    /* server bug or resource failure */
	PS_E_UNKNOWN_CMD = 11, /* control command not known */
	PS_E_ARGS = 12,        /* control command arguments not valid */
};
#define PS_E_LAST PS_E_ARGS

enum ps_role {
	PS_ROLE_FEED = 1,
	PS_ROLE_CONTROL = 2,
};

/* Address families on the wire are the IP version numbers 4 and 6. */
#define PS_FAM_V4 4
#define PS_FAM_V6 6

/* Route types, numbered as the kernel's RTN_* values. */
enum ps_rtype {
	PS_RT_UNICAST = 1,
	PS_RT_BLACKHOLE = 6,
	PS_RT_UNREACHABLE = 7,
	PS_RT_PROHIBIT = 8,
};

/* Nexthop flags. */
#define PS_NH_ONLINK 0x1u
#define PS_NH_FLAGS_ALL PS_NH_ONLINK

/* BYE flags. */
#define PS_BYE_FLUSH 0x1u /* withdraw every route of this client now */

/* ROUTE_STATUS per-route state. */
enum ps_rstate {
	PS_RS_INSTALLED = 1, /* the kernel ACKed the route */
	PS_RS_REMOVED = 2,   /* the kernel ACKed the removal */
	PS_RS_FAILED = 3,    /* the kernel refused; errno and text say why; retried later */
	PS_RS_WAITING = 4,   /* nexthop unreachable now; waits for a link or address change */
	PS_RS_REJECTED = 5,  /* fibd refused it (conflict, table not allowed) */
};

/* LEARN operations. */
enum ps_learn_op {
	PS_LEARN_ADD = 1,
	PS_LEARN_DELETE = 2,
};

/* LEARN_REFRESH phases. */
enum ps_refresh_phase {
	PS_REFRESH_BEGIN = 1, /* every learnable route of the table and family follows again */
	PS_REFRESH_END = 2,   /* routes learned and not sent again since BEGIN are gone */
};

/* CTL_REQUEST flags. */
#define PS_CTL_JSON 0x1u

struct ps_str {
	const char *ptr; /* not NUL-terminated */
	uint32_t len;
};

union ps_addr {
	uint8_t b[16];
	uint32_t w[4];
};

/* Presence bits of struct ps_key. */
#define PS_KEY_TABLE 0x1u
#define PS_KEY_METRIC 0x2u
#define PS_KEY_TOS 0x4u

/* The kernel's identity of a route: (table, family, prefix/len, tos, metric). */
struct ps_key {
	uint32_t has; /* PS_KEY_*: absent table and metric take the session's defaults */
	uint32_t table;
	uint32_t metric;
	uint8_t tos;
	uint8_t family; /* PS_FAM_V4 or PS_FAM_V6 */
	uint8_t plen;
	union ps_addr prefix; /* host bits zero; IPv4 in the first 4 bytes */
};

struct ps_nexthop {
	union ps_addr gw;
	uint8_t gw_family; /* 0: no gateway (device route), PS_FAM_V4 or PS_FAM_V6 */
	uint8_t flags;     /* PS_NH_* */
	uint16_t weight;   /* 1..256 */
	char ifname[PS_IFNAMSIZ]; /* "" when absent */
};

/* Presence bits of struct ps_route's optional attributes. */
#define PS_RA_PREFSRC 0x1u
#define PS_RA_REALM 0x2u
#define PS_RA_SCOPE 0x4u
#define PS_RA_MTU 0x8u
#define PS_RA_PROTOCOL 0x10u /* LEARN only: the kernel route's rtm_protocol */

struct ps_route {
	struct ps_key key;
	uint32_t has; /* PS_RA_* */
	uint8_t type; /* enum ps_rtype */
	uint8_t scope;
	uint8_t protocol;
	uint8_t learn_op; /* LEARN only: enum ps_learn_op */
	uint16_t n_nexthops;
	union ps_addr prefsrc; /* same family as the route */
	uint32_t realm;
	uint32_t mtu;
	struct ps_nexthop nh[PS_NEXTHOPS_MAX];
};

/* Presence bits of struct ps_hello. */
#define PS_HELLO_TABLE 0x1u
#define PS_HELLO_FAMILIES 0x2u
#define PS_HELLO_METRIC 0x4u
#define PS_HELLO_PROTOCOL 0x8u
#define PS_HELLO_STALE 0x10u
#define PS_HELLO_PERSIST 0x20u
#define PS_HELLO_LEARN 0x40u
#define PS_HELLO_RESULTS 0x80u
#define PS_HELLO_REFRESH 0x100u

struct ps_hello {
	uint32_t has;
	uint8_t n_versions;
	uint8_t versions[PS_VERSIONS_MAX];
	uint8_t role; /* enum ps_role */
	char name[PS_NAME_MAX + 1];
	uint32_t table;
	uint8_t families; /* bit 0: IPv4, bit 1: IPv6 (see PS_HELLO_FAM_*) */
	uint8_t protocol;
	uint8_t persist;
	uint8_t learn;
	uint8_t results; /* enum ps_results: which ROUTE_STATUS results the client wants */
	uint8_t refresh; /* LEARN_REFRESH messages frame every learn dump */
	uint32_t metric;
	uint32_t stale_time;
};

/*
 * HELLO results: every result (the default), or only FAILED, WAITING and
 * REJECTED ones, with the INSTALLED and REMOVED ones counted in ROUTE_STATUS's
 * installed and removed instead.
 */
enum ps_results { PS_RESULTS_ALL = 0, PS_RESULTS_FAILURES = 1 };
#define PS_HELLO_FAM_V4 0x1u
#define PS_HELLO_FAM_V6 0x2u

struct ps_welcome {
	uint8_t version;
	char server_id[PS_NAME_MAX + 1];
	uint64_t boot_epoch;
};

struct ps_error {
	uint16_t code;                 /* enum ps_err */
	char field[PS_FIELD_MAX + 1];  /* "" when the error is not about one field */
	struct ps_str text;
};

struct ps_status_entry {
	struct ps_key key; /* all of table, metric and tos are present */
	uint8_t state;     /* enum ps_rstate */
	uint16_t error;    /* positive errno, 0 if none */
	struct ps_str text;/* kernel's extended-ACK text or fibd's reason; may be empty */
};

/* Presence bits of struct ps_status. */
#define PS_STATUS_COUNTS 0x1u

struct ps_status {
	uint32_t has;
	/*
	 * PS_STATUS_COUNTS: the results of this session so far that were
	 * counted, not sent (HELLO results = failures); then n may be 0.
	 */
	uint64_t installed, removed;
	uint16_t n;
	struct ps_status_entry e[PS_STATUS_MAX];
};

struct ps_refresh {
	uint32_t table;
	uint8_t family; /* PS_FAM_V4, PS_FAM_V6 */
	uint8_t phase;  /* enum ps_refresh_phase */
};

struct ps_ctl_request {
	uint32_t req;
	uint32_t flags; /* PS_CTL_* */
	char cmd[PS_CTL_CMD_MAX + 1];
	uint8_t n_args;
	struct ps_str args[PS_CTL_ARGS_MAX];
};

struct ps_ctl_chunk {
	uint32_t req;
	struct ps_str data;
};

struct ps_ctl_end {
	uint32_t req;
	uint16_t code; /* enum ps_err, PS_E_OK when the request succeeded */
	struct ps_str text;
};

struct ps_msg {
	uint8_t type; /* enum ps_type */
	union {
		struct ps_hello hello;
		struct ps_welcome welcome;
		struct ps_error error;
		uint64_t token;      /* PING, PONG */
		uint32_t bye_flags;  /* BYE */
		struct ps_route route; /* ROUTE, LEARN */
		struct ps_key withdraw;
		uint64_t generation; /* FEED_BEGIN, FEED_END */
		struct ps_status status;
		struct ps_str reason; /* REFEED */
		struct ps_refresh refresh; /* LEARN_REFRESH */
		struct ps_ctl_request ctl_request;
		struct ps_ctl_chunk ctl_chunk;
		struct ps_ctl_end ctl_end;
	} u;
};

/* What went wrong, with the field it concerns. Filled by the validator and decoder. */
struct ps_fault {
	int code;          /* enum ps_err */
	const char *field; /* static string, "" if not about one field */
	char text[160];    /* human sentence naming the problem */
};

/*
 * ps_msg_validate - check a message against the protocol's rules and limits.
 * Returns 0 if valid, or -EINVAL with ret_fault (if not NULL) filled.
 */
PS_EXPORT int ps_msg_validate(const struct ps_msg *m, struct ps_fault *ret_fault);

/*
 * ps_route_validate - the checks of ps_msg_validate for a ROUTE (learn 0) or a
 * LEARN (learn 1) body alone: whether the protocol can carry this route.
 */
PS_EXPORT int ps_route_validate(const struct ps_route *rt, int learn, struct ps_fault *ret_fault);

/* ps_msg_type_name - "ROUTE", ... or NULL for an unknown type. */
PS_EXPORT const char *ps_msg_type_name(unsigned type);

/* ps_err_name - "MALFORMED", ... or NULL for an unknown code. */
PS_EXPORT const char *ps_err_name(unsigned code);

/*
 * ps_msg_format - one-line text form of a message (the form tests/vectors use).
 * Writes at most len bytes including the NUL, like snprintf, and returns the
 * length the whole text needs (excluding the NUL).
 */
PS_EXPORT size_t ps_msg_format(const struct ps_msg *m, char *buf, size_t len);

/* ps_str_from - a view of a NUL-terminated string (borrowed). */
PS_EXPORT struct ps_str ps_str_from(const char *s);

/*
 * ps_version_pick - the highest version both sides speak: ours is
 * PS_VERSION_MIN..PS_VERSION_MAX, theirs the list in a HELLO. Returns the version,
 * or 0 if there is none in common.
 */
PS_EXPORT unsigned ps_version_pick(const struct ps_hello *h);

#endif
