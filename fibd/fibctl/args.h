/*
 * args: fibctl's control commands, from the command line to the request fibd
 * reads (a command name and argument pairs), checked before anything is sent.
 */
#ifndef FIBCTL_ARGS_H
#define FIBCTL_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include <proto-shim/msg.h>

/* args_is_control - whether argv[0] names a control command (not feed, not help). */
bool args_is_control(const char *cmd);

/*
 * args_request - argv (argv[0] the command) into req's cmd and args; the
 * arguments borrow argv's strings. 0, or -1 with a reason in err.
 *
 *   status | clients | tables | metrics
 *   show route [table N] [PREFIX [exact|longest|longer]]
 *   dump [--table N] [--family 4|6] [--format text|json|binary]
 *   diff | watch | resync | couple | decouple [--table N]
 *
 * "table N" may be written as in iproute2 or as an option, "--table N".
 */
int args_request(int argc, char **argv, struct ps_ctl_request *req, char *err, size_t errlen);

#endif
