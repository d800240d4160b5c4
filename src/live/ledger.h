/*
** ledger.h: the live ledger's rows (live.h): per queue name, the sums of
** the charges of the bound pods that name it, kept by adding and
** subtracting one pod's charge at a time.
**
** A row is its queue's own pods only; subtree sums are made when a reader
** asks (a fork's resize ledger charges every row on its queue's path), so a
** queue that moves to another parent changes no row. Rows live in a
** persistent map (ptree.h) keyed by queue name and are copied, not changed,
** when a fork may see them.
*/
#ifndef TALLY_LIVE_LEDGER_H
#define TALLY_LIVE_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "epoch.h"
#include "ptree.h"
#include "tally/podcharge.h"
#include "tally/queues.h"

typedef struct {
    char *ar;            /* AccountedResource name */
    tly_qty q;
} tly_lacc;

/* What one pod charges (writer only): podcharge.h, with names instead of indexes. */
typedef struct {
    char *queue;
    bool np;
    tly_qty res[TLY_QR_COUNT];
    tly_rq *all;          /* by resource id */
    uint32_t nall;
    tly_lacc *acc;        /* sorted by AccountedResource name */
    uint32_t nacc;
    char *block;          /* everything above lives in this one allocation */
} tly_contrib;

/* One queue's row. */
typedef struct {
    uint64_t born;
    uint32_t npods;
    tly_qty res[TLY_QR_COUNT], res_np[TLY_QR_COUNT];
    tly_rvec all, all_np;
    tly_lacc *acc;        /* sorted by name; zero entries dropped */
    uint32_t nacc;
} tly_qrow;

/* A contribution from a computed charge (names of qs's AccountedResources). */
void tly_contrib_from(tly_contrib *c, const tly_pod_charge *ch, const tly_queues *qs);
void tly_contrib_free(tly_contrib *c);
bool tly_contrib_equal(const tly_contrib *a, const tly_contrib *b);

/* rows += sign * c on c's queue (writer). */
tly_ptree *tly_ledger_apply(tly_epochs *e, tly_ptree *rows, const tly_contrib *c, int sign);

/* Frees every row (no fork alive). */
void tly_ledger_free(tly_epochs *e, tly_ptree *rows);

/* Whether two rows hold the same amounts (formats aside). */
bool tly_qrow_equal(const tly_qrow *a, const tly_qrow *b);
/* A row that holds nothing (no pods, every amount zero). */
bool tly_qrow_empty(const tly_qrow *r);
void tly_qrow_free(void *p, void *ctx);

/*
** Charges every row of `rows` to the queues of qs (a fork's resize
** ledger and metrics): the row's queue and its ancestors, cpu and memory,
** the non-preemptible part as such. Rows of queues qs does not have are
** left out, as the resize ledger leaves out pods of missing queues.
*/
void tly_ledger_charge_queues(const tly_ptree *rows, tly_queues *qs);

/*
** Charges every row to the queues of qs in full: allocated (every
** resource), allocatedNonPreemptible, and accounted (rows' AccountedResource
** names looked up in qs; names qs lacks are left out).
*/
void tly_ledger_charge_full(const tly_ptree *rows, tly_queues *qs);

#endif
