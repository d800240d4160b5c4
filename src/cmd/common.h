/*
** common.h: what several subcommands share: loading PATH... into a store
** and printing the loader's notes.
*/
#ifndef TALLY_CMD_COMMON_H
#define TALLY_CMD_COMMON_H

#include "tally/store.h"

/*
** Loads every path into a new store and finishes it. *errors is the number
** of read, syntax and decode errors. scheduler_name (may be NULL) overrides
** the Config's.
*/
tly_store *tly_cmd_load(int npaths, char **paths, const char *scheduler_name, int *errors);

/* Prints the store's diagnostics of exactly severity `sev` to stderr. */
void tly_cmd_print_sev(const tly_store *s, int sev);

#endif
