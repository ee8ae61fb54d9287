/*
 * state: the small file that tells a starting fibd which tables it managed, so
 * that it scans them (and adopts its routes there) before any client returns.
 * One line per table: "table ID inet|inet6 [decoupled]"; "decouple new
 * tables" while a fibctl decouple of every table is in force; and one line
 * "fed ID inet|inet6 NAME" per client that fed a table, so that a restarted
 * fibd prunes a table's unclaimed routes as soon as every one of them has fed
 * it again (docs/design.md, invariant 8). NAME is the client's name with bytes outside
 * printable ASCII, space and '%' written as %XX.
 */
#ifndef FIBD_STATE_H
#define FIBD_STATE_H

#include <stdbool.h>
#include <stdint.h>

/* state_init - the file's path ("" for none). */
void state_init(const char *path);

/*
 * What a state file holds, handed to the loader's callbacks in file order (every
 * table line before the fed lines that name it): a table fibd managed, and a
 * client that fed it.
 */
struct state_load_cbs {
	void (*table)(uint32_t table, uint8_t family, bool decoupled, void *ctx);
	void (*fed)(uint32_t table, uint8_t family, const char *client, void *ctx);
};

/* state_load - call the callbacks for each line; a missing file holds nothing. Returns 0 or -errno. */
int state_load(const struct state_load_cbs *cbs, void *ctx);

/*
 * state_parse_line - one line of the file (its newline may be there): 0 (a
 * callback called, or a comment, a blank line); -EINVAL if it is none of the
 * lines above. A line is at most 511 bytes; names at most PS_NAME_MAX.
 */
int state_parse_line(const char *line, const struct state_load_cbs *cbs, void *ctx);

/* state_put_fed - the line "fed ID FAMILY NAME" into ctx, a FILE * (a state_emit_fn). */
void state_put_fed(uint32_t table, uint8_t family, const char *client, void *ctx);

/*
 * The clients that fed each table, for state_save: each calls emit once per
 * (table, client). main.c wires feed's (state cannot call up into feed).
 */
typedef void (*state_emit_fn)(uint32_t table, uint8_t family, const char *client, void *ctx);
void state_set_fed_source(void (*each)(state_emit_fn emit, void *ctx));

/*
 * state_save - write the tables fibd manages now, and who fed them (a temporary
 * file, then rename). Returns 0 or -errno.
 */
int state_save(void);

/*
 * state_dirty - the last save failed: what the file says is out of date until
 * a save succeeds (main.c retries every STATE_RETRY_S seconds). A failure is
 * logged once, and so is the recovery.
 */
#define STATE_RETRY_S 5
bool state_dirty(void);

#endif
