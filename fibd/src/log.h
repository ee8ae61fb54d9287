/*
 * log: fibd's one logging module, after OpenBGPD's log.h. Levels debug, info,
 * warn and fatal; stderr in the foreground, syslog otherwise. Put the context
 * first: "feed bird1: ...", "nl: table 100 192.0.2.0/24: ...".
 */
#ifndef FIBD_LOG_H
#define FIBD_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_FATAL };

/* log_init - where messages go: stderr (foreground) or syslog, and from which level. */
void log_init(const char *ident, bool foreground, enum log_level min);
void log_set_level(enum log_level min);
bool log_is_debug(void);

void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The variants with an error code append ": strerror(err)" (err positive or negative). */
void log_warn_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void log_fatal_errno(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#endif
