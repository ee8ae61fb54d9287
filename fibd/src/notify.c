/*
 * notify: sd_notify without libsystemd (notify.h). The protocol is one
 * datagram per notification on an AF_UNIX socket whose path is in
 * $NOTIFY_SOCKET ('@' first: the abstract namespace).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"
#include "owner.h"
#include "sync.h"
#include "table.h"

#define NOTIFY_STATUS_MS 5000
#define NOTIFY_READY_POLL_MS 100

static struct {
	int fd;
	struct sockaddr_un sa;
	socklen_t salen;
	uv_timer_t watchdog, status;
	bool ready;
	bool open;
} nt = { .fd = -1 };

int
notify_send(const char *text)
{
	if (nt.fd < 0)
		return 0;
	if (sendto(nt.fd, text, strlen(text), MSG_NOSIGNAL, (struct sockaddr *)&nt.sa, nt.salen) < 0)
		return -errno;
	return 0;
}

static void
on_watchdog(uv_timer_t *t)
{
	(void)t;
	notify_send("WATCHDOG=1");
}

static void
on_status(uv_timer_t *t)
{
	unsigned tables = table_count(), pending = 0;
	uint64_t installed = 0;
	char text[256];

	for (unsigned i = 0; i < tables; i++) {
		struct rtable *rt = table_at((uint16_t)i);
		installed += rt->n_installed;
		pending += !sync_table_ready_now(rt);
	}
	if (!nt.ready && !pending) {
		nt.ready = true;
		notify_send("READY=1");
		log_info("ready: the first scan of every known table is done");
		uv_timer_start(t, on_status, NOTIFY_STATUS_MS, NOTIFY_STATUS_MS);
	}
	snprintf(text, sizeof(text), "STATUS=%u tables%s, %llu routes installed, %u clients", tables,
	    pending ? " (first scans under way)" : "", (unsigned long long)installed,
	    owner_count());
	notify_send(text);
}

void
notify_init(uv_loop_t *loop)
{
	const char *path = getenv("NOTIFY_SOCKET"), *wd = getenv("WATCHDOG_USEC");
	const char *wd_pid = getenv("WATCHDOG_PID");
	size_t len;

	uv_timer_init(loop, &nt.watchdog);
	uv_timer_init(loop, &nt.status);
	nt.open = true;
	/* Until READY, look often; afterwards, STATUS every few seconds. */
	uv_timer_start(&nt.status, on_status, 0, NOTIFY_READY_POLL_MS);
	if (!path || !*path)
		return;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(nt.sa.sun_path)) {
		log_warn("NOTIFY_SOCKET %s is not a socket path; not notifying systemd", path);
		return;
	}
	nt.sa.sun_family = AF_UNIX;
	memcpy(nt.sa.sun_path, path, len);
	if (path[0] == '@')
		nt.sa.sun_path[0] = '\0';
	nt.salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	nt.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (nt.fd < 0) {
		log_warn_errno(errno, "cannot notify systemd");
		return;
	}
	if (wd && (!wd_pid || (pid_t)atol(wd_pid) == getpid())) {
		unsigned long long usec = strtoull(wd, NULL, 10);
		if (usec >= 2000)
			uv_timer_start(&nt.watchdog, on_watchdog, 0, usec / 2000);
	}
}

void
notify_close(void)
{
	if (!nt.open)
		return;
	nt.open = false;
	notify_send("STOPPING=1");
	uv_close((uv_handle_t *)&nt.watchdog, NULL);
	uv_close((uv_handle_t *)&nt.status, NULL);
	if (nt.fd >= 0)
		close(nt.fd);
	nt.fd = -1;
}
