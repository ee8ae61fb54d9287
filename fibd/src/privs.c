/*
 * privs: become an unprivileged user keeping CAP_NET_ADMIN (privs.h).
 *
 * The order matters: the bounding set can only shrink while fibd still has
 * CAP_SETPCAP (as root); PR_SET_KEEPCAPS keeps the permitted set across
 * setuid, which clears the effective set; capset then leaves exactly
 * CAP_NET_ADMIN in both.
 */
#include <errno.h>
#include <grp.h>
#include <stdint.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "privs.h"

int
privs_lookup(const char *name, uid_t *ret_uid, gid_t *ret_gid)
{
	struct passwd *pw = getpwnam(name);

	if (!pw)
		return -ENOENT;
	*ret_uid = pw->pw_uid;
	*ret_gid = pw->pw_gid;
	return 0;
}

static int
fail(char *ret_err, size_t errlen, const char *step)
{
	int err = errno;

	snprintf(ret_err, errlen, "%s: %s", step, strerror(err));
	return -err;
}

int
privs_drop(uid_t uid, gid_t gid, char *ret_err, size_t errlen)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	for (int cap = 0; cap <= 63; cap++)
		if (cap != CAP_NET_ADMIN && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return fail(ret_err, errlen, "dropping capabilities from the bounding set");
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return fail(ret_err, errlen, "PR_SET_KEEPCAPS");
	if (setgroups(0, NULL) < 0)
		return fail(ret_err, errlen, "setgroups");
	if (setresgid(gid, gid, gid) < 0)
		return fail(ret_err, errlen, "setresgid");
	if (setresuid(uid, uid, uid) < 0)
		return fail(ret_err, errlen, "setresuid");
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return fail(ret_err, errlen, "PR_SET_KEEPCAPS");
	memset(data, 0, sizeof(data));
	data[0].permitted = data[0].effective = 1u << CAP_NET_ADMIN;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return fail(ret_err, errlen, "capset");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail(ret_err, errlen, "PR_SET_NO_NEW_PRIVS");
	return 0;
}

int
privs_narrow(char *ret_err, size_t errlen)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	const uint32_t keep = 1u << CAP_NET_ADMIN;

	for (int cap = 0; cap <= 63; cap++)
		if (cap != CAP_NET_ADMIN && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, cap, 0, 0) < 0 &&
		    errno != EINVAL)
			return fail(ret_err, errlen, "lowering ambient capabilities");
	if (syscall(SYS_capget, &hdr, data) < 0)
		return fail(ret_err, errlen, "capget");
	data[0].permitted &= keep;
	data[0].effective &= keep;
	data[0].inheritable &= keep;
	data[1].permitted = data[1].effective = data[1].inheritable = 0;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return fail(ret_err, errlen, "capset");
	return 0;
}
