/*
 * conf: fibd's configuration file, lines of `key = value`; `#` starts a comment.
 * docs/fibd.conf.md lists the keys.
 */
#ifndef FIBD_CONF_H
#define FIBD_CONF_H

#include <stdint.h>

#include "log.h"

#define CONF_DEFAULT_PATH "/etc/fibd/fibd.conf"
#define CONF_DEFAULT_SOCKET "/run/fibd/fibd.sock"
#define CONF_DEFAULT_PROTOCOL 12
#define CONF_DEFAULT_STATE "/var/lib/fibd/tables"

struct conf {
	char socket[108];
	uint8_t protocol;
	enum log_level log_level;
	int nexthop_objects; /* -1 auto, 0 off, 1 on */
	uint32_t startup_grace; /* seconds */
	uint32_t rescan_interval; /* seconds, 0: off */
	uint32_t monitor_buffer;  /* bytes, 0: the default */
	char state_file[256];   /* "" for none */
	int flush_on_exit;      /* withdraw every route on SIGTERM / SIGINT */
	long read_gid;          /* group whose members may use read-only commands, -1: none */
	long admin_gid;         /* group whose members may do everything, -1: none */
	uint32_t control_timeout; /* seconds a control session's reader may stall */
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
