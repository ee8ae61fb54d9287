/* Stand-ins for sync's and learn's entry points in unit tests of feed. */
#include "learn.h"
#include "prune.h"
#include "sync.h"

void
sync_learn_table(struct rtable *t)
{
	(void)t;
}

void
learn_forget(struct rtable *t)
{
	(void)t;
}

/* The tables prune was told have every claim in, in order (test_feed reads them). */
struct rtable *sync_fake_claimed[16];
unsigned sync_fake_n_claimed;

void
prune_table_claimed(struct rtable *t)
{
	if (sync_fake_n_claimed < 16)
		sync_fake_claimed[sync_fake_n_claimed] = t;
	sync_fake_n_claimed++;
}

/* Rescans asked for (a diff asks for one of each table it compares); all granted. */
unsigned sync_fake_rescans;

bool
sync_rescan_table(struct rtable *t)
{
	(void)t;
	sync_fake_rescans++;
	return true;
}

/* Tables made (the monitor would be told). */
unsigned sync_fake_tables_changed;

void
sync_tables_changed(void)
{
	sync_fake_tables_changed++;
}
