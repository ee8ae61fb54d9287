/*
 * state: the small file that tells a starting fibd which tables it managed, so
 * that it scans them (and adopts its routes there) before any client returns.
 * One line per table: "table ID inet|inet6 [decoupled]", and "decouple new
 * tables" while a fibctl decouple of every table is in force.
 */
#ifndef FIBD_STATE_H
#define FIBD_STATE_H

#include <stdbool.h>
#include <stdint.h>

/* state_init - the file's path ("" for none). */
void state_init(const char *path);

/* state_load - call cb for each table in the file; a missing file is no table. Returns 0 or -errno. */
int state_load(void (*cb)(uint32_t table, uint8_t family, bool decoupled, void *ctx), void *ctx);

/* state_save - write the tables fibd manages now (temporary file, then rename). */
int state_save(void);

#endif
