/*
 *	BIRD 3 -- fibd protocol: where BIRD 3's API differs from BIRD 2's
 *
 *	Can be freely distributed and used under the terms of the GNU GPL.
 */

#ifndef _BIRD_FIBD_VERSION_H_
#define _BIRD_FIBD_VERSION_H_

/*
 * The protocol gets its own loop (and thread), off the main one; its timers
 * and events belong to that loop, and its socket is opened in it.
 */
#define FIBD_CF_LOOP(cf)	((cf)->loop_order = DOMAIN_ORDER(proto))
#define FIBD_KICK(p)		ev_send_loop((p)->p.loop, (p)->tx_event)
#define FIBD_TM_START(p, t, after) tm_start_in((t), (after), (p)->p.loop)
#define FIBD_SK_OPEN(p, sk)	sk_open((sk), (p)->p.loop)
#define FIBD_SHUTTING_DOWN	SHUTTING_DOWN
/* The state a protocol ends in once its flush is done (the core then takes it down) */
#define FIBD_PS_DONE		PS_FLUSH
#define FIBD_PS_IS_DOWN(P)	((P)->proto_state == PS_DOWN_XX || (P)->proto_state == PS_FLUSH)
/*
 * The tx event runs in the protocol's own loop, not BIRD's main one: a run
 * fills its FIBD_TX_ROUNDS buffers whatever that takes. With 1 ms a run, as
 * for BIRD 2, the pending set drained too slowly and a full feed took twice
 * as long.
 */
#define FIBD_TX_BUDGET_NS	(60ULL * 1000000000ULL)
/*
 * A configuration commit starts its protocols in phases on the main loop: this
 * one (a connector, like kernel) before the static protocols, which import
 * their routes later in the same commit. Its own loop may run meanwhile, on
 * reconfiguration and, with bird-3.3.2-startup.patch, in the first commit
 * too: a feed then would end before the static routes are in, and fibd would
 * prune what it had kept of them from the last session (BIRD restarted). So
 * the start sends an event to the main loop, which runs it once the commit
 * (its synchronous part) has returned, and the first connect waits for that
 * (fibd3/fibd.c). Not conf.c's configuring: that stays set while anything
 * holds the old configuration (a paused `birdc show route`), for as long as
 * it does.
 */
struct fibd_proto;
void fibd_after_commit(struct fibd_proto *p);
int fibd_commit_pending(struct fibd_proto *p);
#define FIBD_AFTER_COMMIT(p)	fibd_after_commit(p)
#define FIBD_COMMIT_PENDING(p)	fibd_commit_pending(p)

#endif
