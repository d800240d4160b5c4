/*
** common.h: what several subcommands share: loading PATH... into a store
** and printing the loader's notes.
*/
#ifndef TALLY_CMD_COMMON_H
#define TALLY_CMD_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "live.h"
#include "tally/store.h"

/*
** Loads every path into a new store and finishes it. *errors is the number
** of read, syntax and decode errors. scheduler_name (may be NULL) overrides
** the Config's.
*/
tly_store *tly_cmd_load(int npaths, char **paths, const char *scheduler_name, int *errors);

/* What a command reads: PATH... or the API server (contract section 9). */
typedef struct {
    int npaths;
    char **paths;
    tly_cmd_live live;
    const char *gating;   /* --queue-admission-gating all|opt-in|off, or NULL */
    struct tly_crdset *crds; /* validate: CRDs and the objects they define (crd.h), or NULL */
} tly_cmd_input;

/*
** Loads the input into a new, finished store: the paths, or one LIST of
** every kind from the API server (its clock, the Date of the first LIST,
** set as the store's clock). NULL after printing a fatal live error (the
** command exits 1).
*/
tly_store *tly_cmd_load_input(const char *cmd, const tly_cmd_input *in, const char *scheduler_name,
                              int *errors);

/* What `simulate` and `explain` share: the input, its clock and both engines, run. */
typedef struct tly_runsched tly_runsched;
typedef struct tly_podsched tly_podsched;
typedef struct {
    tly_store *s;
    tly_runsched *rs;
    tly_podsched *ps;
    int64_t now;
    bool have_clock;
    int errors;      /* read, syntax and decode errors of the input */
} tly_cmd_engines;

/*
** Loads the input, sets the clock (--now text when non-NULL, else the
** input's own clock: a snapshot's `now` or the live Date, else its newest
** time), runs the Run scheduler and the pod engine. Returns 0, 2 after
** printing a usage error naming `cmd` (a bad --now), or 1 after a fatal
** live error.
*/
int tly_cmd_run_engines(const char *cmd, const tly_cmd_input *in, const char *scheduler_name,
                        const char *now, tly_cmd_engines *out);
void tly_cmd_engines_free(tly_cmd_engines *e);

/*
** For the subcommands that take only PATH...: a leading --help or -h prints
** usage to stdout, a leading "--" ends the options, any other leading option
** is a usage error naming `cmd`. Returns the index of the first path, or
** TLY_CMD_HELP / TLY_CMD_USAGE when the caller should exit 0 / 2.
*/
#define TLY_CMD_HELP (-1)
#define TLY_CMD_USAGE (-2)
int tly_cmd_paths_start(int argc, char **argv, const char *cmd, void (*usage)(FILE *));

/*
** The options of the commands that run the engines: when argv[*i] is
** `--now T`, `--scheduler-name N` or `--queue-admission-gating MODE` (or the
** --flag=VALUE forms), stores the value, advances *i past a separate value
** and returns true.
*/
bool tly_cmd_engine_option(int argc, char **argv, int *i, const char **now, const char **sched,
                           const char **gating);
/* Checks --queue-admission-gating's value; 0, or 2 after a usage error naming cmd. */
int tly_cmd_gating_check(const char *cmd, const char *gating);

/* Prints the store's diagnostics of exactly severity `sev` to stderr. */
void tly_cmd_print_sev(const tly_store *s, int sev);

#endif
