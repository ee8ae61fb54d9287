/*
 *	BIRD 2 -- fibd protocol: where BIRD 2's API differs from BIRD 3's
 *
 *	Can be freely distributed and used under the terms of the GNU GPL.
 */

#ifndef _BIRD_FIBD_VERSION_H_
#define _BIRD_FIBD_VERSION_H_

/* BIRD 2 runs every protocol in its one loop. */
#define FIBD_CF_LOOP(cf)	do { } while (0)
#define FIBD_KICK(p)		ev_schedule((p)->tx_event)
#define FIBD_TM_START(p, t, after) tm_start((t), (after))
#define FIBD_SK_OPEN(p, sk)	sk_open(sk)
#define FIBD_SHUTTING_DOWN	(config->shutdown)
/* The state a protocol ends in once its flush is done */
#define FIBD_PS_DONE		PS_DOWN
#define FIBD_PS_IS_DOWN(P)	((P)->proto_state == PS_DOWN)
/*
 * The tx event runs on BIRD's one loop: 1 ms a run. A full feed's pump of 16
 * whole buffers a run took up to 39 ms there (BIRD's debug latency).
 */
#define FIBD_TX_BUDGET_NS	1000000ULL
/* The commit runs in the same loop: the protocol cannot connect meanwhile. */
#define FIBD_AFTER_COMMIT(p)	do { } while (0)
#define FIBD_COMMIT_PENDING(p)	0

#endif
