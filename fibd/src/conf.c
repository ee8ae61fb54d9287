/*
 * conf: a small key = value parser. Every line is checked; the first bad one
 * fails the whole file, so a running fibd keeps its configuration when a reload
 * finds a mistake.
 */
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

int
conf_parse(const char *text, struct conf *ret, char *ret_err, size_t errlen)
{
	struct conf c = *ret;
	const char *p = text;
	unsigned lineno = 0;

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
		} else {
			snprintf(ret_err, errlen, "line %u: unknown key '%.64s'", lineno, key);
			return -EINVAL;
		}
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
