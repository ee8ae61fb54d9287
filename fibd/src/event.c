/* event: the one sink of route events (event.h). */
#include <stddef.h>

#include "event.h"

unsigned event_demand;
static event_sink sink;

void
event_set_sink(event_sink s)
{
	sink = s;
}

void
event_emit(const struct event *ev)
{
	if (sink)
		sink(ev);
}
