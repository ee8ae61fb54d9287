/*
 * notify: systemd's service notification protocol (sd_notify(3)), written out:
 * datagrams of KEY=VALUE lines to the socket in $NOTIFY_SOCKET. Without that
 * variable every call does nothing, so fibd runs the same outside systemd.
 *
 * fibd says READY=1 once the first scan of every table it knew at start (the
 * state file) is done, STATUS= with its tables, routes and clients every few
 * seconds, and WATCHDOG=1 from a loop timer at half of $WATCHDOG_USEC: a timer
 * on the loop fires only while the loop turns, so a wedged loop gets fibd
 * restarted, while a long backlog of routes (work in bounded steps) does not.
 */
#ifndef FIBD_NOTIFY_H
#define FIBD_NOTIFY_H

#include <uv.h>

/* notify_init - read the environment; start the watchdog and status timers. */
void notify_init(uv_loop_t *loop);
void notify_close(void);

/* notify_send - one notification ("READY=1", "STOPPING=1", ...); 0 or -errno. */
int notify_send(const char *text);

#endif
