# netns/link.sh: the one link every namespace here gets, sourced by netns/lib.sh,
# bench/ and scripts/demo.sh. Routes via 198.51.100.1 and 2001:db8:ff::1 (the
# gateways netns/routes.py gen is given) resolve through it.

# link_setup NS DEV PEER: a veth pair DEV/PEER inside NS, both up; DEV has
# 198.51.100.2/24 and 2001:db8:ff::2/64 (no duplicate address detection). No
# IPv6 link-local addresses: they would come a while later, with routes of
# their own, and move the route counts the samplers read.
link_setup() {
	ip -n "$1" link add "$2" type veth peer name "$3" || return 1
	ip -n "$1" link set "$2" addrgenmode none
	ip -n "$1" link set "$3" addrgenmode none
	ip -n "$1" link set "$2" up
	ip -n "$1" link set "$3" up
	ip -n "$1" addr add 198.51.100.2/24 dev "$2"
	ip -n "$1" addr add 2001:db8:ff::2/64 dev "$2" nodad
}
