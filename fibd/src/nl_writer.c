/*
 * nl_writer: the one thread that owns the netlink write system call. The
 * kernel applies a whole batch inside sendmsg, and that now and then takes
 * 80 to 330 ms (the IPv4 FIB trie resizes and waits for an RCU grace period);
 * no batch size avoids it, so the loop must not be the one waiting.
 *
 * The loop builds batches (nl_send.c) into slots, NL_SLOTS of them used as a
 * ring: the oldest busy slot is head, the one being filled is fill, and the
 * ones between are queued or sent. The thread takes the queued slots in
 * order, sends each one whole (waiting on its own for a socket that would
 * block), marks it sent with the outcome, and wakes the loop; the loop takes
 * the outcomes in the same order (nl_on_sent) and frees the slots. The thread
 * touches nothing but the slots and the socket: every route, the window and
 * the ACKs stay on the loop. After a send the kernel refused, the thread
 * waits for the loop (nl_writer_resume) before the next one, so that the
 * refused batch's messages are the oldest in flight once the ACKs of the
 * batches before it are read.
 *
 * The thread's sends are bulk work that can wait: it runs SCHED_BATCH and
 * writer_nice steps below the loop (nl_set_writer_nice), so that on a machine
 * short of cores BIRD, and fibd's own loop, get the CPU first when they want
 * it. With `bench/run.sh churn` on two cores, BIRD's CLI p99 fell from 8 to 12
 * ms to 5 to 8 ms, and the time to converge did not grow.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "nl-internal.h"

enum slot_state { SLOT_FREE, SLOT_QUEUED, SLOT_SENDING, SLOT_SENT };

struct slot {
	_Alignas(8) char buf[NL_BATCH_CAP];
	struct nl_sent out;
	enum slot_state state; /* under w.mu */
};

static struct {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t wake; /* the thread: a slot was queued, or stop, or resume */
	pthread_cond_t idle; /* nl_sync: the thread has nothing queued or under way */
	uv_async_t done;
	bool running;
	bool stop;
	bool paused; /* after a refused send, until the loop has taken it */
	unsigned head, fill, busy;
	struct slot slots[NL_SLOTS];
} w;

/* A send under way, or one the thread may start. Under w.mu. */
static bool
under_way(void)
{
	for (unsigned i = 0; i < w.busy; i++) {
		enum slot_state st = w.slots[(w.head + i) % NL_SLOTS].state;
		if (st == SLOT_SENDING || (st == SLOT_QUEUED && !w.paused))
			return true;
	}
	return false;
}

/* The first queued slot, if the thread may send it. Under w.mu. */
static struct slot *
next_queued(void)
{
	for (unsigned i = 0; i < w.busy; i++) {
		struct slot *s = &w.slots[(w.head + i) % NL_SLOTS];
		if (s->state == SLOT_QUEUED)
			return w.paused ? NULL : s;
	}
	return NULL;
}

static void
send_slot(struct slot *s)
{
	uint64_t t0 = uv_hrtime(); /* a plain monotonic clock read: fine off the loop */

	s->out.err = 0;
	s->out.eagain = 0;
	for (;;) {
		if (nl_io_send(s->buf, s->out.len) >= 0)
			break;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
			s->out.err = errno;
			break;
		}
		/* The socket would block: wait here, not on the loop. */
		s->out.eagain++;
		struct pollfd p = { .fd = mnl_socket_get_fd(nl.wr), .events = POLLOUT };
		if (poll(&p, 1, 100) < 0)
			poll(NULL, 0, 1);
	}
	s->out.send_ns = uv_hrtime() - t0;
}

static int writer_nice = 10;

void
nl_set_writer_nice(int steps)
{
	writer_nice = steps;
}

/*
 * In the thread, first: its name, and SCHED_BATCH and writer_nice steps below
 * the loop (0: as the loop). The kernel may preempt it inside a send while it
 * holds the RTNL lock, and other RTNL users then wait for it a little longer
 * under load; the figures above are with that.
 */
static void
lower_priority(void)
{
	struct sched_param sp = { 0 };
	pid_t tid = gettid();
	int base, r;

	pthread_setname_np(pthread_self(), "fibd-writer");
	if (!writer_nice)
		return;
	/* (another policy an operator set, for the whole service, is kept) */
	if ((sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_OTHER &&
	    (r = pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp)) != 0)
		log_warn_errno(r, "nl: the writer thread stays SCHED_OTHER");
	errno = 0;
	base = getpriority(PRIO_PROCESS, (id_t)tid);
	if (errno || setpriority(PRIO_PROCESS, (id_t)tid, base + writer_nice > 19 ? 19 : base + writer_nice) < 0)
		log_warn_errno(errno, "nl: cannot lower the writer thread's priority");
}

static void *
writer_main(void *arg)
{
	struct slot *s;
	(void)arg;

	lower_priority();

	pthread_mutex_lock(&w.mu);
	while (!w.stop) {
		if (!(s = next_queued())) {
			pthread_cond_broadcast(&w.idle);
			pthread_cond_wait(&w.wake, &w.mu);
			continue;
		}
		s->state = SLOT_SENDING;
		pthread_mutex_unlock(&w.mu);
		send_slot(s);
		pthread_mutex_lock(&w.mu);
		s->state = SLOT_SENT;
		if (s->out.err)
			w.paused = true;
		uv_async_send(&w.done);
	}
	pthread_cond_broadcast(&w.idle);
	pthread_mutex_unlock(&w.mu);
	return NULL;
}

/* Take the outcomes of sent slots, oldest first, and free them. */
static void
take_sent(void)
{
	for (;;) {
		struct slot *s;
		pthread_mutex_lock(&w.mu);
		s = w.busy ? &w.slots[w.head] : NULL;
		if (!s || s->state != SLOT_SENT) {
			pthread_mutex_unlock(&w.mu);
			return;
		}
		pthread_mutex_unlock(&w.mu);
		nl_on_sent(&s->out); /* the slot is the loop's until freed below */
		pthread_mutex_lock(&w.mu);
		s->state = SLOT_FREE;
		w.head = (w.head + 1) % NL_SLOTS;
		w.busy--;
		pthread_mutex_unlock(&w.mu);
	}
}

static void
on_done(uv_async_t *h)
{
	(void)h;
	take_sent();
}

int
nl_writer_start(uv_loop_t *loop)
{
	int r;

	memset(&w, 0, offsetof(__typeof__(w), slots));
	for (unsigned i = 0; i < NL_SLOTS; i++)
		w.slots[i].state = SLOT_FREE;
	if ((r = uv_async_init(loop, &w.done, on_done)) < 0)
		return r;
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.wake, NULL);
	pthread_cond_init(&w.idle, NULL);
	if ((r = pthread_create(&w.thread, NULL, writer_main, NULL)) != 0) {
		log_warn_errno(r, "nl: cannot start the writer thread");
		uv_close((uv_handle_t *)&w.done, NULL);
		return -r;
	}
	w.running = true;
	return 0;
}

/* Stop the thread after the send under way; batches not sent yet are dropped. */
void
nl_writer_stop(void)
{
	if (!w.running)
		return;
	pthread_mutex_lock(&w.mu);
	w.stop = true;
	pthread_cond_signal(&w.wake);
	pthread_mutex_unlock(&w.mu);
	pthread_join(w.thread, NULL);
	w.running = false;
	uv_close((uv_handle_t *)&w.done, NULL);
	pthread_cond_destroy(&w.wake);
	pthread_cond_destroy(&w.idle);
	pthread_mutex_destroy(&w.mu);
}

/* The buffer of the batch being filled. */
char *
nl_writer_buf(void)
{
	return w.slots[w.fill].buf;
}

/*
 * Hand the batch being filled to the thread. Returns 0, or -EAGAIN when
 * every other slot is still busy: the loop is woken when one is free.
 */
int
nl_writer_hand(size_t len, uint32_t msgs, uint32_t first_seq)
{
	struct slot *s = &w.slots[w.fill];

	pthread_mutex_lock(&w.mu);
	if (w.busy + 1 >= NL_SLOTS) {
		pthread_mutex_unlock(&w.mu);
		return -EAGAIN;
	}
	s->out.len = len;
	s->out.msgs = msgs;
	s->out.first_seq = first_seq;
	s->state = SLOT_QUEUED;
	w.busy++;
	w.fill = (w.fill + 1) % NL_SLOTS;
	pthread_cond_signal(&w.wake);
	pthread_mutex_unlock(&w.mu);
	return 0;
}

/* The loop has taken a refused send: the thread goes on. */
void
nl_writer_resume(void)
{
	pthread_mutex_lock(&w.mu);
	w.paused = false;
	pthread_cond_signal(&w.wake);
	pthread_mutex_unlock(&w.mu);
}

/* Drop the batches not sent yet (their messages are written again); the one under way goes out. */
void
nl_writer_cancel_queued(void)
{
	pthread_mutex_lock(&w.mu);
	while (w.busy) {
		unsigned last = (w.head + w.busy - 1) % NL_SLOTS;
		if (w.slots[last].state != SLOT_QUEUED)
			break;
		w.slots[last].state = SLOT_FREE;
		w.busy--;
		w.fill = last;
	}
	pthread_mutex_unlock(&w.mu);
}

/* Batches handed to the thread and not yet taken back by the loop. */
unsigned
nl_writer_busy(void)
{
	unsigned n;

	pthread_mutex_lock(&w.mu);
	n = w.busy;
	pthread_mutex_unlock(&w.mu);
	return n;
}

/*
 * Wait until the thread has sent every batch handed to it (or stopped after
 * a refused one), and take the outcomes. For tests and for shutdown: the loop
 * never waits for the kernel otherwise.
 */
void
nl_sync(void)
{
	if (!w.running)
		return;
	pthread_mutex_lock(&w.mu);
	while (under_way())
		pthread_cond_wait(&w.idle, &w.mu);
	pthread_mutex_unlock(&w.mu);
	take_sent();
}
