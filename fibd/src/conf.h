/*
 * conf: fibd's configuration file, lines of `key = value`; `#` starts a comment.
 * docs/fibd.conf.md lists the keys.
 */
#ifndef FIBD_CONF_H
#define FIBD_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include "log.h"

#define CONF_DEFAULT_PATH "/etc/fibd/fibd.conf"
#define CONF_DEFAULT_SOCKET "/run/fibd/fibd.sock"
#define CONF_DEFAULT_PROTOCOL 12
#define CONF_DEFAULT_STATE "/var/lib/fibd/tables"

#define CONF_BGP_LISTEN_MAX 8
#define CONF_BGP_PEERS_MAX 64
#define CONF_BGP_NAME_MAX 59 /* "bgp:" and the name are a client name (64 bytes) */
#define CONF_BGP_MD5_MAX 80  /* TCP_MD5SIG_MAXKEYLEN */
#define CONF_BGP_STALE_DEFAULT 360

/* An address fibd listens on for BGP: `bgp_listen = ADDRESS [PORT]`. */
struct conf_bgp_listen {
	int family; /* AF_INET, AF_INET6 */
	uint8_t addr[16];
	uint16_t port;
};

/* `bgp_peer = NAME address A as N table T [metric M] [md5 KEY] [stale_time S] [persist]` */
struct conf_bgp_peer {
	char name[CONF_BGP_NAME_MAX + 1];
	int family;
	uint8_t addr[16];
	uint32_t as;
	uint32_t table;
	uint32_t metric;
	char md5[CONF_BGP_MD5_MAX + 1]; /* "" for none */
	uint32_t stale_time; /* after a graceful restart: how long to wait for End-of-RIB */
	bool persist;        /* keep its routes when the session is lost */
};

struct conf {
	char socket[108];
	uint8_t protocol;
	enum log_level log_level;
	int nexthop_objects; /* -1 auto, 0 off, 1 on */
	int nice;            /* the loop's nice steps below the priority fibd started with, 0..19 */
	int writer_nice;     /* the writer thread's nice steps below the loop, 0..19 */
	uint32_t startup_grace; /* seconds */
	uint32_t rescan_interval; /* seconds, 0: off */
	uint32_t monitor_buffer;  /* bytes, 0: the default */
	char state_file[256];   /* "" for none */
	int flush_on_exit;      /* withdraw every route on SIGTERM / SIGINT */
	long read_gid;          /* group whose members may use read-only commands, -1: none */
	long admin_gid;         /* group whose members may do everything, -1: none */
	uint32_t control_timeout; /* seconds a control session's reader may stall */
	/* BGP ingest (bgp.c); lists are the file's, not added to on a reload */
	uint32_t bgp_as;
	uint32_t bgp_router_id; /* host order; 0: not set */
	unsigned n_bgp_listen;
	struct conf_bgp_listen bgp_listen[CONF_BGP_LISTEN_MAX];
	unsigned n_bgp_peers;
	struct conf_bgp_peer bgp_peers[CONF_BGP_PEERS_MAX];
};

/* conf_defaults - the built-in configuration. */
void conf_defaults(struct conf *c);

/*
 * conf_parse - parse text (NUL-terminated) into *ret on top of its current
 * values. Returns 0, or -EINVAL with ret_err (size errlen) saying "line N: why";
 * *ret is then unchanged.
 */
int conf_parse(const char *text, struct conf *ret, char *ret_err, size_t errlen);

/* conf_load - read and parse a file. A missing file is an error unless optional. */
int conf_load(const char *path, int optional, struct conf *ret, char *ret_err, size_t errlen);

#endif
