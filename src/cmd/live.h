/*
** live.h: the live source of the subcommands (contract section 9):
** --kubeconfig FILE, --context NAME or --in-cluster in place of PATH..., with
** the client flags --kube-api-qps and --kube-api-burst.
*/
#ifndef TALLY_CMD_LIVE_H
#define TALLY_CMD_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/kube.h"
#include "tally/store.h"

typedef struct {
    bool set;                /* a live flag was given */
    tly_kube_source src;
    tly_kube_options opt;
} tly_cmd_live;

void tly_cmd_live_init(tly_cmd_live *lv);

/*
** When argv[*i] is a live flag, takes it (and its value), advances *i and
** returns 1; returns 0 for any other argument; -1 after printing a usage
** error naming `cmd` (a missing or bad value).
*/
int tly_cmd_live_option(int argc, char **argv, int *i, const char *cmd, tly_cmd_live *lv);

/* The flags' help lines, for the usage texts. */
#define TLY_CMD_LIVE_HELP                                                                       \
    "  --kubeconfig FILE      read the cluster from the API server instead of PATH...\n"        \
    "                         (default $KUBECONFIG, then ~/.kube/config)\n"                     \
    "  --context NAME         the kubeconfig context (default: its current-context)\n"          \
    "  --in-cluster           the Pod's service account, inside a cluster\n"                    \
    "  --kube-api-qps N       client-side request rate (default 50)\n"                          \
    "  --kube-api-burst N     requests allowed in a burst (default 100)\n"

/* Connects; 0, or 1 after printing what is wrong (the command exits 1). */
int tly_cmd_live_connect(const char *cmd, const tly_cmd_live *lv, tly_kube **out);

/*
** Connects and lists every kind once (capture.h): one note per kind the
** server does not serve, ending with `absent_tail`. 0, or 1 after printing
** the error (unreachable, refused credentials, a refused LIST).
*/
typedef struct tly_kube_capture tly_kube_capture;
int tly_cmd_live_capture(const char *cmd, const tly_cmd_live *lv, const char *absent_tail,
                         tly_kube_capture **out);

/*
** Lists every kind once into s (not finished): one note per absent kind on
** stderr, *clock the Date of the first LIST. Returns 0, or 1 after printing
** the error (unreachable, refused credentials, a refused LIST).
*/
int tly_cmd_live_load(const char *cmd, const tly_cmd_live *lv, tly_store *s, int64_t *clock,
                      int *errors);

#endif
