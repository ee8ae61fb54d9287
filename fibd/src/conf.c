/*
 * conf: a small key = value parser. Every line is checked; the first bad one
 * fails the whole file, so a running fibd keeps its configuration when a reload
 * finds a mistake.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

void
conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->socket, sizeof(c->socket), "%s", CONF_DEFAULT_SOCKET);
	c->protocol = CONF_DEFAULT_PROTOCOL;
	c->log_level = LOG_LVL_INFO;
	c->nexthop_objects = -1;
	c->nice = 5;
	c->writer_nice = 10;
	c->startup_grace = 120;
	c->rescan_interval = 0;
	c->read_gid = c->admin_gid = -1;
	c->control_timeout = 60;
	snprintf(c->state_file, sizeof(c->state_file), "%s", CONF_DEFAULT_STATE);
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int
parse_uint(const char *v, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long n;

	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n > max)
		return -1;
	*ret = n;
	return 0;
}

/* An IPv4 or IPv6 address. */
static int
parse_addr(const char *v, int *family, uint8_t *addr)
{
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, v, addr) == 1)
		*family = AF_INET;
	else if (inet_pton(AF_INET6, v, addr) == 1)
		*family = AF_INET6;
	else
		return -1;
	return 0;
}

/* The next space-separated word of *p (NUL-terminated in place), or NULL at the end. */
static char *
word(char **p)
{
	char *w;

	while (isspace((unsigned char)**p))
		(*p)++;
	if (!**p)
		return NULL;
	w = *p;
	while (**p && !isspace((unsigned char)**p))
		(*p)++;
	if (**p)
		*(*p)++ = '\0';
	return w;
}

/* `ADDRESS [PORT]` */
static int
parse_bgp_listen(char *v, struct conf_bgp_listen *l, char *err, size_t errlen)
{
	char *a = word(&v), *port = word(&v);
	unsigned long u = 179;

	if (!a || parse_addr(a, &l->family, l->addr) < 0 || word(&v) ||
	    (port && (parse_uint(port, 65535, &u) < 0 || !u))) {
		snprintf(err, errlen, "bgp_listen must be an address and an optional port 1..65535");
		return -1;
	}
	l->port = (uint16_t)u;
	return 0;
}

/* `NAME address A as N table T [metric M] [md5 KEY] [stale_time S] [persist]` */
static int
parse_bgp_peer(char *v, struct conf_bgp_peer *pr, char *err, size_t errlen)
{
	char *name = word(&v), *k;
	bool have_addr = false, have_as = false, have_table = false;

	memset(pr, 0, sizeof(*pr));
	pr->stale_time = CONF_BGP_STALE_DEFAULT;
	if (!name || strlen(name) > CONF_BGP_NAME_MAX || strspn(name,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != strlen(name)) {
		snprintf(err, errlen, "bgp_peer: a name of 1..%d letters, digits, '_', '.' or '-' first",
		    CONF_BGP_NAME_MAX);
		return -1;
	}
	snprintf(pr->name, sizeof(pr->name), "%s", name);
	while ((k = word(&v))) {
		char *val = strcmp(k, "persist") ? word(&v) : k;
		unsigned long u;
		if (!val) {
			snprintf(err, errlen, "bgp_peer %s: '%.32s' needs a value", name, k);
			return -1;
		}
		if (!strcmp(k, "address") && parse_addr(val, &pr->family, pr->addr) == 0) {
			have_addr = true;
		} else if (!strcmp(k, "as") && parse_uint(val, UINT32_MAX, &u) == 0 && u) {
			pr->as = (uint32_t)u;
			have_as = true;
		} else if (!strcmp(k, "table") && parse_uint(val, UINT32_MAX, &u) == 0 && u) {
			pr->table = (uint32_t)u;
			have_table = true;
		} else if (!strcmp(k, "metric") && parse_uint(val, UINT32_MAX, &u) == 0) {
			pr->metric = (uint32_t)u;
		} else if (!strcmp(k, "md5") && strlen(val) <= CONF_BGP_MD5_MAX) {
			snprintf(pr->md5, sizeof(pr->md5), "%s", val);
		} else if (!strcmp(k, "stale_time") && parse_uint(val, 86400, &u) == 0) {
			pr->stale_time = (uint32_t)u;
		} else if (!strcmp(k, "persist")) {
			pr->persist = true;
		} else {
			snprintf(err, errlen, "bgp_peer %s: bad '%.32s %.64s' (address ADDR, as 1..4294967295, "
			    "table 1..4294967295, metric N, md5 KEY of at most %d bytes, stale_time 0..86400, persist)",
			    name, k, val, CONF_BGP_MD5_MAX);
			return -1;
		}
	}
	if (!have_addr || !have_as || !have_table) {
		snprintf(err, errlen, "bgp_peer %s: needs address, as and table", name);
		return -1;
	}
	return 0;
}

/* A BGP peer line against those before it: names and addresses are unique. */
static int
bgp_peer_unique(const struct conf *c, const struct conf_bgp_peer *pr, char *err, size_t errlen)
{
	for (unsigned i = 0; i < c->n_bgp_peers; i++) {
		const struct conf_bgp_peer *o = &c->bgp_peers[i];
		if (!strcmp(o->name, pr->name) || (o->family == pr->family && !memcmp(o->addr, pr->addr, 16))) {
			snprintf(err, errlen, "bgp_peer %s: the %s of peer %s", pr->name,
			    strcmp(o->name, pr->name) ? "address" : "name", o->name);
			return -1;
		}
	}
	return 0;
}

int
conf_parse(const char *text, struct conf *ret, char *ret_err, size_t errlen)
{
	struct conf c = *ret;
	const char *p = text;
	unsigned lineno = 0;

	/* The lists are the file's: a reload does not add to the running ones. */
	c.n_bgp_listen = 0;
	c.n_bgp_peers = 0;

	while (*p) {
		char line[1024], *key, *val, *eq, *hash;
		size_t n = strcspn(p, "\n");
		unsigned long u;

		lineno++;
		if (n >= sizeof(line)) {
			snprintf(ret_err, errlen, "line %u: longer than %zu bytes", lineno,
			    sizeof(line) - 1);
			return -EINVAL;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (p[n] == '\n');
		if ((hash = strchr(line, '#')))
			*hash = '\0';
		key = trim(line);
		if (!*key)
			continue;
		if (!(eq = strchr(key, '='))) {
			snprintf(ret_err, errlen, "line %u: expected 'key = value'", lineno);
			return -EINVAL;
		}
		*eq = '\0';
		key = trim(key);
		val = trim(eq + 1);
		if (!strcmp(key, "socket")) {
			if (val[0] != '/' || strlen(val) >= sizeof(c.socket)) {
				snprintf(ret_err, errlen,
				    "line %u: socket must be an absolute path under %zu bytes", lineno,
				    sizeof(c.socket));
				return -EINVAL;
			}
			snprintf(c.socket, sizeof(c.socket), "%s", val);
		} else if (!strcmp(key, "protocol")) {
			if (parse_uint(val, 255, &u) < 0 || u < 1 || u == 2) {
				snprintf(ret_err, errlen,
				    "line %u: protocol must be 1..255 and not 2 (kernel)", lineno);
				return -EINVAL;
			}
			c.protocol = (uint8_t)u;
		} else if (!strcmp(key, "log_level")) {
			if (!strcmp(val, "debug"))
				c.log_level = LOG_LVL_DEBUG;
			else if (!strcmp(val, "info"))
				c.log_level = LOG_LVL_INFO;
			else if (!strcmp(val, "warning"))
				c.log_level = LOG_LVL_WARN;
			else {
				snprintf(ret_err, errlen,
				    "line %u: log_level must be debug, info or warning", lineno);
				return -EINVAL;
			}
		} else if (!strcmp(key, "startup_grace")) {
			if (parse_uint(val, 86400, &u) < 0) {
				snprintf(ret_err, errlen, "line %u: startup_grace must be 0..86400 seconds",
				    lineno);
				return -EINVAL;
			}
			c.startup_grace = (uint32_t)u;
		} else if (!strcmp(key, "monitor_buffer")) {
			if (parse_uint(val, 1u << 30, &u) < 0 || u < 4096) {
				snprintf(ret_err, errlen,
				    "line %u: monitor_buffer must be 4096..1073741824 bytes", lineno);
				return -EINVAL;
			}
			c.monitor_buffer = (uint32_t)u;
		} else if (!strcmp(key, "rescan_interval")) {
			if (parse_uint(val, 86400, &u) < 0 || (u && u < 10)) {
				snprintf(ret_err, errlen,
				    "line %u: rescan_interval must be 0 (off) or 10..86400 seconds", lineno);
				return -EINVAL;
			}
			c.rescan_interval = (uint32_t)u;
		} else if (!strcmp(key, "read_group") || !strcmp(key, "admin_group")) {
			struct group *gr = strcmp(val, "none") ? getgrnam(val) : NULL;
			if (strcmp(val, "none") && !gr) {
				snprintf(ret_err, errlen, "line %u: %s: no group '%.64s' on this system",
				    lineno, key, val);
				return -EINVAL;
			}
			*(key[0] == 'r' ? &c.read_gid : &c.admin_gid) = gr ? (long)gr->gr_gid : -1;
		} else if (!strcmp(key, "control_timeout")) {
			if (parse_uint(val, 86400, &u) < 0 || u < 1) {
				snprintf(ret_err, errlen, "line %u: control_timeout must be 1..86400 seconds",
				    lineno);
				return -EINVAL;
			}
			c.control_timeout = (uint32_t)u;
		} else if (!strcmp(key, "state_file")) {
			if (strcmp(val, "none") && (val[0] != '/' || strlen(val) >= sizeof(c.state_file))) {
				snprintf(ret_err, errlen,
				    "line %u: state_file must be an absolute path under %zu bytes, or none",
				    lineno, sizeof(c.state_file));
				return -EINVAL;
			}
			snprintf(c.state_file, sizeof(c.state_file), "%s", strcmp(val, "none") ? val : "");
		} else if (!strcmp(key, "flush_on_exit")) {
			if (!strcmp(val, "yes"))
				c.flush_on_exit = 1;
			else if (!strcmp(val, "no"))
				c.flush_on_exit = 0;
			else {
				snprintf(ret_err, errlen, "line %u: flush_on_exit must be yes or no", lineno);
				return -EINVAL;
			}
		} else if (!strcmp(key, "nexthop_objects")) {
			if (!strcmp(val, "auto"))
				c.nexthop_objects = -1;
			else if (!strcmp(val, "on"))
				c.nexthop_objects = 1;
			else if (!strcmp(val, "off"))
				c.nexthop_objects = 0;
			else {
				snprintf(ret_err, errlen,
				    "line %u: nexthop_objects must be auto, on or off", lineno);
				return -EINVAL;
			}
		} else if (!strcmp(key, "nice")) {
			if (parse_uint(val, 19, &u) < 0) {
				snprintf(ret_err, errlen, "line %u: nice must be 0..19", lineno);
				return -EINVAL;
			}
			c.nice = (int)u;
		} else if (!strcmp(key, "writer_nice")) {
			if (parse_uint(val, 19, &u) < 0) {
				snprintf(ret_err, errlen, "line %u: writer_nice must be 0..19", lineno);
				return -EINVAL;
			}
			c.writer_nice = (int)u;
		} else if (!strcmp(key, "bgp_as")) {
			if (parse_uint(val, UINT32_MAX, &u) < 0 || !u) {
				snprintf(ret_err, errlen, "line %u: bgp_as must be 1..4294967295", lineno);
				return -EINVAL;
			}
			c.bgp_as = (uint32_t)u;
		} else if (!strcmp(key, "bgp_router_id")) {
			struct in_addr a;
			if (inet_pton(AF_INET, val, &a) != 1 || !a.s_addr) {
				snprintf(ret_err, errlen, "line %u: bgp_router_id must be an IPv4 address, not 0.0.0.0",
				    lineno);
				return -EINVAL;
			}
			c.bgp_router_id = ntohl(a.s_addr);
		} else if (!strcmp(key, "bgp_listen")) {
			char err[200];
			if (c.n_bgp_listen == CONF_BGP_LISTEN_MAX) {
				snprintf(ret_err, errlen, "line %u: at most %d bgp_listen lines", lineno,
				    CONF_BGP_LISTEN_MAX);
				return -EINVAL;
			}
			if (parse_bgp_listen(val, &c.bgp_listen[c.n_bgp_listen], err, sizeof(err)) < 0) {
				snprintf(ret_err, errlen, "line %u: %s", lineno, err);
				return -EINVAL;
			}
			c.n_bgp_listen++;
		} else if (!strcmp(key, "bgp_peer")) {
			char err[300];
			if (c.n_bgp_peers == CONF_BGP_PEERS_MAX) {
				snprintf(ret_err, errlen, "line %u: at most %d bgp_peer lines", lineno,
				    CONF_BGP_PEERS_MAX);
				return -EINVAL;
			}
			if (parse_bgp_peer(val, &c.bgp_peers[c.n_bgp_peers], err, sizeof(err)) < 0 ||
			    bgp_peer_unique(&c, &c.bgp_peers[c.n_bgp_peers], err, sizeof(err)) < 0) {
				snprintf(ret_err, errlen, "line %u: %s", lineno, err);
				return -EINVAL;
			}
			c.n_bgp_peers++;
		} else {
			snprintf(ret_err, errlen, "line %u: unknown key '%.64s'", lineno, key);
			return -EINVAL;
		}
	}
	if (c.n_bgp_peers && (!c.bgp_as || !c.bgp_router_id || !c.n_bgp_listen)) {
		snprintf(ret_err, errlen, "bgp_peer lines need bgp_as, bgp_router_id and a bgp_listen line");
		return -EINVAL;
	}
	*ret = c;
	return 0;
}

int
conf_load(const char *path, int optional, struct conf *ret, char *ret_err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *text;
	long n;
	int r;

	if (!f) {
		if (optional && errno == ENOENT)
			return 0;
		snprintf(ret_err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || n > 1 << 20 || fseek(f, 0, SEEK_SET)) {
		snprintf(ret_err, errlen, "%s: not a readable file of at most 1 MiB", path);
		fclose(f);
		return -EINVAL;
	}
	text = calloc(1, (size_t)n + 1);
	if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) {
		snprintf(ret_err, errlen, "%s: cannot read", path);
		free(text);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	{
		char err[256];
		r = conf_parse(text, ret, err, sizeof(err));
		if (r < 0)
			snprintf(ret_err, errlen, "%s: %s", path, err);
	}
	free(text);
	return r;
}
