/*
 * parser: routes in iproute2's `ip route` syntax, one per line, for fibctl feed.
 *
 *   [unicast|blackhole|unreachable|prohibit] PREFIX|default
 *       [via [inet|inet6] ADDR] [dev IFNAME] [onlink] [weight W]
 *       [nexthop via ADDR dev IFNAME weight W [onlink]]...
 *       [metric|priority|preference N] [table N] [tos|dsfield N] [src ADDR]
 *       [realm N] [mtu N] [scope global|universe|site|link|host|nowhere|N]
 *       [proto X]   (accepted and ignored: fibd marks routes with its own)
 *
 * A prefix without a length is a host route; `default` is 0.0.0.0/0 (write ::/0
 * for IPv6). Host bits must be zero, as ip route requires.
 */
#ifndef FIBCTL_PARSER_H
#define FIBCTL_PARSER_H

#include <stddef.h>

#include <proto-shim/msg.h>

/*
 * parse_route_line - one line into a ROUTE message *ret (scratch: meaningful only
 * on 0). Returns 0 for a route, 1 for a blank or comment line, or -EINVAL with a
 * reason in err (size errlen).
 */
int parse_route_line(const char *line, struct ps_msg *ret, char *err, size_t errlen);

#endif
