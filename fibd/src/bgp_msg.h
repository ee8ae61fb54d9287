/*
 * bgp_msg: BGP-4 messages, read and built, for a speaker that only receives
 * (codec layer; docs/design.md). No socket, no loop, no state of its own.
 *
 * Read: the header (RFC 4271; 65,535 bytes with extended messages, RFC 8654),
 * OPEN with its capabilities (RFC 5492; extended optional parameters, RFC
 * 9072), UPDATE (RFC 4271, multiprotocol RFC 4760, ADD-PATH RFC 7911, IPv4
 * over an IPv6 next hop RFC 8950, End-of-RIB RFC 4724) with the revised error
 * handling of RFC 7606, NOTIFICATION. Built: OPEN, KEEPALIVE, NOTIFICATION.
 *
 * Every reader is bounded by the message it is given and refuses what is
 * malformed with the NOTIFICATION code the RFCs ask for; an UPDATE whose
 * attributes are malformed in a way RFC 7606 lets a speaker survive is taken
 * as a withdrawal of its routes ("treat-as-withdraw") instead.
 */
#ifndef FIBD_BGP_MSG_H
#define FIBD_BGP_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <proto-shim/msg.h>

#define BGP_HDR_LEN 19
#define BGP_MSG_MAX 4096      /* RFC 4271 */
#define BGP_EXT_MSG_MAX 65535 /* RFC 8654 */
#define BGP_OPEN_OUT_MAX 128  /* fibd's OPEN */

enum bgp_type { BGP_OPEN = 1, BGP_UPDATE, BGP_NOTIFICATION, BGP_KEEPALIVE, BGP_ROUTE_REFRESH };

/* NOTIFICATION error codes (RFC 4271 4.5) and the subcodes used here. */
enum {
	BGP_E_HEADER = 1,
	BGP_E_OPEN = 2,
	BGP_E_UPDATE = 3,
	BGP_E_HOLD = 4,
	BGP_E_FSM = 5,
	BGP_E_CEASE = 6,
};
enum { BGP_E_HDR_SYNC = 1, BGP_E_HDR_LEN = 2, BGP_E_HDR_TYPE = 3 };
enum {
	BGP_E_OPEN_VERSION = 1,
	BGP_E_OPEN_PEER_AS = 2,
	BGP_E_OPEN_ID = 3,
	BGP_E_OPEN_PARAM = 4,
	BGP_E_OPEN_HOLD = 6,
	BGP_E_OPEN_CAP = 7,
};
enum {
	BGP_E_UPD_ATTR_LIST = 1,
	BGP_E_UPD_WELLKNOWN = 2,
	BGP_E_UPD_MISSING = 3,
	BGP_E_UPD_FLAGS = 4,
	BGP_E_UPD_LENGTH = 5,
	BGP_E_UPD_OPTIONAL = 9,
	BGP_E_UPD_NETWORK = 10,
};
enum {
	BGP_E_CEASE_PREFIXES = 1,
	BGP_E_CEASE_SHUTDOWN = 2,
	BGP_E_CEASE_DECONFIGURED = 3,
	BGP_E_CEASE_RESET = 4,
	BGP_E_CEASE_REJECTED = 5,
	BGP_E_CEASE_CONFIG = 6,
	BGP_E_CEASE_COLLISION = 7,
	BGP_E_CEASE_RESOURCES = 8,
};

/* Why a message is refused: the NOTIFICATION to send, and words for the log. */
struct bgp_error {
	uint8_t code, subcode;
	uint8_t len;       /* bytes of data */
	uint8_t data[32];  /* the NOTIFICATION's data field (what the RFC asks for, cut to 32 bytes) */
	char why[120];
};

/* The families fibd takes: unicast IPv4 and IPv6. */
#define BGP_AFI_IPV4 1
#define BGP_AFI_IPV6 2
#define BGP_SAFI_UNICAST 1
enum { BGP_V4 = 0, BGP_V6 = 1, BGP_NFAM = 2 };

/* ADD-PATH directions (RFC 7911), as a capability states them. */
#define BGP_ADDPATH_RECV 1
#define BGP_ADDPATH_SEND 2

/*
 * bgp_frame - the message at p, of which avail bytes are here: its length
 * when whole, 0 when more is needed, -1 when the header is bad (marker, a
 * length under 19 or over max, or one too short for its type; unknown type):
 * e says why.
 */
int bgp_frame(const uint8_t *p, size_t avail, size_t max, uint8_t *type, struct bgp_error *e);

/* An OPEN, as the peer sent it. */
struct bgp_open {
	uint8_t version;
	uint16_t my_as;     /* the 2-octet field (23456 when the AS has 4 octets) */
	uint32_t as;        /* the speaker's AS: from the 4-octet capability, else my_as */
	uint16_t hold_time; /* seconds: 0, or at least 3 */
	uint32_t router_id; /* host order */
	bool any_mp;        /* a multiprotocol capability (else IPv4 unicast alone, RFC 4760 8) */
	bool mp[BGP_NFAM];  /* multiprotocol unicast IPv4, IPv6 */
	bool as4;
	bool route_refresh; /* RFC 2918, or the Cisco code 128 */
	bool enhanced_refresh;
	bool ext_msg;
	uint8_t addpath[BGP_NFAM]; /* BGP_ADDPATH_* the peer offers */
	bool ext_nh_v4;     /* IPv4 unicast NLRI with an IPv6 next hop (RFC 8950) */
	bool gr;            /* graceful restart (RFC 4724) */
	bool gr_restarted;  /* its R bit: it has restarted */
	uint16_t gr_time;   /* its restart time, seconds */
	bool gr_fam[BGP_NFAM]; /* families it preserves across a restart... */
	bool gr_fwd[BGP_NFAM]; /* ... and with forwarding state kept (F bit) */
	unsigned unknown_caps;
};

/*
 * bgp_open_parse - the body of an OPEN (after the header; len bytes). Checks
 * version 4, a hold time of 0 or 3 and more, a router id other than 0, and
 * every parameter and capability's length. Returns 0, or -1 with e set (the
 * peer's AS is the caller's to check).
 */
int bgp_open_parse(const uint8_t *body, size_t len, struct bgp_open *o, struct bgp_error *e);

/* What fibd says of itself in its OPEN. */
struct bgp_local {
	uint32_t as;
	uint32_t router_id; /* host order */
	uint16_t hold_time;
	uint16_t gr_time;   /* the restart time fibd asks a peer to wait for it */
};

/*
 * bgp_open_build - fibd's OPEN (header included) into buf, which has room for
 * BGP_OPEN_OUT_MAX bytes. It offers: multiprotocol IPv4 and IPv6 unicast, 4-octet
 * AS, route refresh, extended messages, ADD-PATH receive for both families,
 * IPv4 NLRI over an IPv6 next hop, and graceful restart for both families with
 * forwarding state kept (the kernel keeps fibd's routes across its restart).
 * Returns the length.
 */
size_t bgp_open_build(uint8_t *buf, const struct bgp_local *l);

/* bgp_keepalive_build - a KEEPALIVE (19 bytes). */
size_t bgp_keepalive_build(uint8_t *buf);

/*
 * bgp_eor_build - End-of-RIB of family fam (BGP_V4 or BGP_V6) into buf (room for
 * BGP_EOR_MAX bytes): an UPDATE with nothing in it for IPv4, MP_UNREACH_NLRI with
 * no prefix alone for IPv6 (RFC 4724 2). Returns the length.
 */
#define BGP_EOR_MAX 29
size_t bgp_eor_build(uint8_t *buf, int fam);

/* bgp_notification_build - a NOTIFICATION of e into buf (room for 21 + 32 bytes). */
size_t bgp_notification_build(uint8_t *buf, const struct bgp_error *e);

/*
 * bgp_notification_parse - the body of a NOTIFICATION: code and subcode, and
 * words for the log (the RFC's name of the error; a shutdown message, RFC
 * 9003, when one came).
 */
void bgp_notification_parse(const uint8_t *body, size_t len, uint8_t *code, uint8_t *subcode,
    char *text, size_t text_len);

/* What both OPENs agreed on, for reading UPDATEs. */
struct bgp_session_caps {
	bool as4;                  /* AS numbers in AS_PATH have 4 octets */
	bool ibgp;                 /* same AS: LOCAL_PREF is mandatory */
	bool fam[BGP_NFAM];        /* the families the session carries */
	bool addpath[BGP_NFAM];    /* the peer sends path identifiers */
	bool ext_nh_v4;            /* IPv4 NLRI may come with an IPv6 next hop */
};

/* A prefix of an UPDATE. */
struct bgp_prefix {
	uint8_t fam; /* BGP_V4, BGP_V6 */
	uint8_t plen;
	uint32_t path_id; /* 0 without ADD-PATH */
	union ps_addr addr; /* host bits zero */
};

/* A run of prefixes in an UPDATE (validated by bgp_update_parse), to be walked with bgp_nlri_next. */
struct bgp_nlri {
	const uint8_t *p, *end;
	uint8_t fam;
	bool addpath;
};

/*
 * bgp_nlri_next - the next prefix of a run, into *out; false at its end.
 * Host bits are cleared: the kernel takes no others.
 */
bool bgp_nlri_next(struct bgp_nlri *n, struct bgp_prefix *out);

/* An UPDATE, read. */
struct bgp_update {
	struct bgp_nlri withdrawn[2]; /* the IPv4 field; MP_UNREACH_NLRI */
	unsigned n_withdrawn;
	struct bgp_nlri reach[2];     /* the IPv4 NLRI field; MP_REACH_NLRI */
	unsigned n_reach;
	/* The next hop of each reach run (same index): a gateway of any family. */
	union ps_addr nh[2];
	uint8_t nh_family[2];         /* PS_FAM_V4, PS_FAM_V6 */
	bool eor;                     /* End-of-RIB (RFC 4724) of family eor_fam */
	uint8_t eor_fam;
	/*
	 * Treat-as-withdraw (RFC 7606): an attribute was malformed in a way the
	 * session survives; the reach runs are to be withdrawn, and why says why.
	 */
	bool withdraw;
	char why[120];
	unsigned discarded; /* attributes discarded (malformed, but without effect here) */
};

/*
 * bgp_update_parse - the body of an UPDATE (after the header; len bytes)
 * under the session's caps. Every prefix run is checked whole before 0 is
 * returned. -1: the session must be reset, with e set (lengths that do not
 * add up, a prefix that is malformed, a malformed or repeated
 * MP_REACH_NLRI/MP_UNREACH_NLRI, an unrecognized well-known attribute).
 * Families the session does not carry, and other SAFIs, are skipped.
 */
int bgp_update_parse(const uint8_t *body, size_t len, const struct bgp_session_caps *c,
    struct bgp_update *u, struct bgp_error *e);

#endif
