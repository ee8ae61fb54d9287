/*
 * log: messages to stderr (foreground, with a level word) or syslog (daemon).
 * Formatting happens only for messages at or above the chosen level.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

static bool to_stderr = true;
static enum log_level level = LOG_LVL_INFO;

void
log_init(const char *ident, bool foreground, enum log_level min)
{
	to_stderr = foreground;
	level = min;
	if (!foreground)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_set_level(enum log_level min)
{
	level = min;
}

bool
log_is_debug(void)
{
	return level <= LOG_LVL_DEBUG;
}

static void
vlog(enum log_level lvl, int err, const char *fmt, va_list ap)
{
	static const char *const word[] = { "debug", "info", "warning", "fatal" };
	static const int prio[] = { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_CRIT };
	char msg[1024];
	int n;

	if (lvl < level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (err && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", strerror(err < 0 ? -err : err));
	if (to_stderr)
		fprintf(stderr, "fibd: %s: %s\n", word[lvl], msg);
	else
		syslog(prio[lvl], "%s", msg);
}

#define LOG_FN(name, lvl)                                                                     \
	void name(const char *fmt, ...)                                                       \
	{                                                                                     \
		va_list ap;                                                                   \
		va_start(ap, fmt);                                                            \
		vlog(lvl, 0, fmt, ap);                                                        \
		va_end(ap);                                                                   \
	}
LOG_FN(log_debug, LOG_LVL_DEBUG)
LOG_FN(log_info, LOG_LVL_INFO)
LOG_FN(log_warn, LOG_LVL_WARN)

void
log_warn_errno(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(LOG_LVL_WARN, err, fmt, ap);
	va_end(ap);
}

void
log_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(LOG_LVL_FATAL, 0, fmt, ap);
	va_end(ap);
	exit(1);
}

void
log_fatal_errno(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(LOG_LVL_FATAL, err, fmt, ap);
	va_end(ap);
	exit(1);
}
