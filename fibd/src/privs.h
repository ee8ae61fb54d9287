/*
 * privs: least privilege without systemd. Started as root with --user NAME,
 * fibd becomes NAME (its uid, gid, no supplementary groups) and keeps one
 * capability, CAP_NET_ADMIN, in its permitted and effective sets; every other
 * capability leaves the bounding set, so none can come back.
 */
#ifndef FIBD_PRIVS_H
#define FIBD_PRIVS_H

#include <stddef.h>
#include <sys/types.h>

/* privs_lookup - NAME's uid and gid. Returns 0, or -ENOENT. */
int privs_lookup(const char *name, uid_t *ret_uid, gid_t *ret_gid);

/*
 * privs_drop - become uid/gid keeping only CAP_NET_ADMIN. Returns 0, or -errno
 * with ret_err (errlen bytes) saying which step failed.
 */
int privs_drop(uid_t uid, gid_t gid, char *ret_err, size_t errlen);

/*
 * privs_narrow - started unprivileged with capabilities given (systemd's
 * AmbientCapabilities), keep CAP_NET_ADMIN alone, once what needed more (the
 * BGP listening sockets on port 179: CAP_NET_BIND_SERVICE) is done. Returns 0,
 * or -errno with ret_err saying which step failed.
 */
int privs_narrow(char *ret_err, size_t errlen);

#endif
