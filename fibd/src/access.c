/*
 * access: who may do what on fibd's socket, from the peer's credentials
 * (SO_PEERCRED, SO_PEERGROUPS), read once per connection (access.h).
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "access.h"

static struct feed_access conf;


static bool
in_group(gid_t g, gid_t gid, const gid_t *groups, size_t n)
{
	if (gid == g)
		return true;
	for (size_t i = 0; i < n; i++)
		if (groups[i] == g)
			return true;
	return false;
}

enum access
access_of(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups, uid_t self_uid,
    gid_t self_gid, const struct feed_access *a)
{
	if (uid == 0 || uid == self_uid || in_group(self_gid, gid, groups, n_groups) ||
	    (a->admin_set && in_group(a->admin_gid, gid, groups, n_groups)))
		return ACCESS_ADMIN;
	if (a->read_set && in_group(a->read_gid, gid, groups, n_groups))
		return ACCESS_READ;
	return ACCESS_NONE;
}

/* A group's name for messages, or its number. */
static const char *
group_name(gid_t g, char *buf, size_t len)
{
	struct group *gr = getgrgid(g);

	if (gr)
		snprintf(buf, len, "%s", gr->gr_name);
	else
		snprintf(buf, len, "%u", (unsigned)g);
	return buf;
}

/*
 * Who may do it, for a refusal: "root, fibd's user or members of groups A, B
 * and C": fibd's own group, the read group (unless the admin right is
 * needed), the admin group.
 */
void
access_who_may(bool admin, char *buf, size_t len)
{
	const struct feed_access *a = &conf;
	gid_t g[3];
	unsigned n = 0;
	size_t at;

	g[n++] = getegid();
	if (!admin && a->read_set)
		g[n++] = a->read_gid;
	if (a->admin_set)
		g[n++] = a->admin_gid;
	snprintf(buf, len, "root, fibd's user or members of group%s", n > 1 ? "s" : "");
	for (unsigned i = 0; i < n; i++) {
		char name[64];
		at = strlen(buf);
		snprintf(buf + at, len - at, "%s%s", i == 0 ? " " : i == n - 1 ? " and " : ", ",
		    group_name(g[i], name, sizeof(name)));
	}
}

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

/*
 * The peer's supplementary groups into *ret (some, or a larger allocation the
 * caller frees when it is not some); their count, 0 if the kernel says nothing.
 */
static size_t
peer_groups(int sock, gid_t *some, socklen_t some_len, gid_t **ret)
{
	socklen_t len = some_len;
	gid_t *more;

	*ret = some;
	if (getsockopt(sock, SOL_SOCKET, SO_PEERGROUPS, some, &len) == 0)
		return len / sizeof(gid_t);
	if (errno != ERANGE || !(more = malloc(len)))
		return 0; /* no groups known: none count */
	if (getsockopt(sock, SOL_SOCKET, SO_PEERGROUPS, more, &len) < 0) {
		free(more);
		return 0;
	}
	*ret = more;
	return len / sizeof(gid_t);
}

enum access
access_of_peer(int sock, int *ret_uid, int *ret_pid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	gid_t some[64], *groups;
	enum access a;
	size_t n;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return ACCESS_NONE;
	*ret_uid = (int)cr.uid;
	*ret_pid = (int)cr.pid;
	n = peer_groups(sock, some, sizeof(some), &groups);
	a = access_of(cr.uid, cr.gid, groups, n, geteuid(), getegid(), &conf);
	if (groups != some)
		free(groups);
	return a;
}

void
access_set(const struct feed_access *a)
{
	if (a != &conf)
		conf = *a;
}

const struct feed_access *
access_conf(void)
{
	return &conf;
}
