/*
 * access: who may do what on fibd's socket (front layer). Root, fibd's own user
 * and the members of fibd's own group (the socket's group: those the file mode
 * 0660 lets in) may do everything, and so may members of admin_group; members
 * of read_group may read (status, show, dump, diff, metrics, watch); nobody
 * else may do anything.
 */
#ifndef FIBD_ACCESS_H
#define FIBD_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * What a peer may do, from its credentials (SO_PEERCRED, SO_PEERGROUPS): read
 * (status, show, dump, diff, metrics, watch) or also change state (feed,
 * resync, couple, decouple).
 */
enum access { ACCESS_NONE, ACCESS_READ, ACCESS_ADMIN };

struct feed_access {
	bool read_set, admin_set;
	gid_t read_gid;  /* members may read */
	gid_t admin_gid; /* members may do everything */
	uint32_t control_timeout_s; /* 0: FEED_CONTROL_TIMEOUT_S */
};

/*
 * access_of - root, fibd's own user and the members of fibd's own group (the
 * socket's group: those the file mode 0660 lets in) may do everything, members
 * of the admin group too (as the peer's group or one of its supplementary
 * groups); members of the read group may read; nobody else may do anything.
 */
enum access access_of(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups, uid_t self_uid,
    gid_t self_gid, const struct feed_access *a);

/* access_set, access_conf - the groups and the control timeout (fibd.conf), at start and on a reload. */
void access_set(const struct feed_access *a);
const struct feed_access *access_conf(void);

/*
 * access_of_peer - what the peer of a connected Unix socket may do; its uid and
 * pid into *ret_uid and *ret_pid (left alone if the kernel does not say).
 */
enum access access_of_peer(int sock, int *ret_uid, int *ret_pid);

/*
 * access_who_may - who may do it, for a refusal: "root, fibd's user or members
 * of groups A, B and C": fibd's own group, the read group (unless the admin
 * right is needed), the admin group.
 */
void access_who_may(bool admin, char *buf, size_t len);

#endif
