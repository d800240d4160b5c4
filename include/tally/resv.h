/*
** resv.h: reservations every replica sees (src/ctrl/resv.c;
** docs/controllers.md "Reservations across replicas").
**
** An admitted upsize (--reserve-upsizes) and an admitted claim
** (/validate/runs-status) hold room that the watched state does not show
** yet. One replica keeps such holds in memory and decides under one lock,
** so it never admits more than the room. Two replicas would each see only
** their own holds and together admit the room twice. So in live mode the
** holds live in one ConfigMap, `<lease-name>-reservations` in the lease
** namespace, and a decision that reserves is a transaction on it:
**
**   read the ConfigMap (a cached copy is fine: the write checks it)
**   decide against the live state plus every hold in it
**   write it back with the resourceVersion it was read at
**   409: someone else reserved in between: read again and decide again
**
** The API server accepts one write per resourceVersion, so two decisions
** that both saw the last room cannot both be recorded: one of them decides
** again and sees the other's hold. Only a write that succeeded makes a
** decision "allowed"; if the write fails (the API server cannot be reached,
** RBAC refuses it, the contention does not end within 8 attempts), the
** decision is a denial that says so. A denial that relied on a cached copy
** is decided once more on a fresh read, so a hold another replica has
** released does not deny.
**
** Holds are released by evidence only: a state that has seen the object
** after the admission (by resourceVersion, store.h tly_store_seen_rv) shows
** the outcome, or the hold's time is up (wall clock, since replicas
** share it). A relist or a restart therefore never drops a hold a decision
** relies on; the ConfigMap outlives every replica.
**
** Evidence is one replica's: a hold released because replica A's state
** shows the pod resized is charged by A's state, not yet by a replica B
** whose watch is behind. So each entry carries a watermark, `seen`: the
** newest resourceVersion of the kind (pods, Runs) of any state that
** released a hold from it. A decision is made on a fork taken inside the
** transaction that has seen at least that far (tly_resv_fork waits for the
** watch to catch up, then denies); whatever a hold stopped counting, that
** fork counts from the objects themselves.
**
** Thread-safe: one mutex per replica serializes its transactions (their
** API round trip included).
*/
#ifndef TALLY_RESV_H
#define TALLY_RESV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tally/admit.h"
#include "tally/kube.h"
#include "tally/live.h"
#include "tally/node.h"
#include "tally/store.h"

typedef struct tly_resv tly_resv;

typedef struct {
    tly_kube *kube;              /* not owned */
    tly_live *live;              /* not owned: decisions take their forks from it (tly_resv_fork) */
    const char *ns, *name;       /* the ConfigMap; name NULL: "tally-reservations" */
    int64_t upsize_timeout_ms;   /* --reserve-upsizes' TIMEOUT; 0: upsizes are not reserved */
    void (*log)(void *ctx, int level, const char *event, const char *msg);
    void *log_ctx;
} tly_resv_options;

tly_resv *tly_resv_create(const tly_resv_options *o);
void tly_resv_destroy(tly_resv *r);

/*
** One step of a transaction on the table's entry `key`: decide on `text`
** (the entry's current value, "" when none; `fresh` when it was read for
** this attempt). Returns TLY_RESV_DONE (decided, nothing to write),
** TLY_RESV_WRITE (decided if *out, a malloc'd new value, is stored) or
** TLY_RESV_FRESH (decide again on a fresh read; answered as DONE when the
** text was fresh already). The step may be called again: it must start over.
*/
enum { TLY_RESV_DONE = 0, TLY_RESV_WRITE = 1, TLY_RESV_FRESH = 2 };
typedef int (*tly_resv_step)(void *ctx, const char *text, bool fresh, char **out);

/*
** Runs the transaction. TLY_OK when the last step's decision stands (its
** write, if any, was stored). Otherwise err says why: TLY_ELIMIT when other
** writers won 8 attempts in a row, or the error of the read or write.
*/
int tly_resv_run(tly_resv *r, const char *key, tly_resv_step step, void *ctx, char *err, size_t errlen);

/*
** An entry's text: {"seen": "N", "holds": [ ...one JSON object per line... ]}
** (lines sorted, so equal tables are equal text); "" for none. The parse
** returns the holds array (NULL when absent or unreadable) and the watermark.
*/
char *tly_resv_entry_text(uint64_t seen, char **lines, size_t n);
const tly_node *tly_resv_entry_parse(const char *text, tly_arena *a, uint64_t *seen);

/*
** A fork of the live state that has seen the kind at least up to min_seen,
** waiting up to 5 s for the watch to get there; NULL (err says why) if it
** does not. The caller destroys it.
*/
tly_store *tly_resv_fork(tly_resv *r, int kind, uint64_t min_seen, char *err, size_t errlen);

/*
** /validate/pods-resize with shared upsize reservations (upsize.h's rules on
** the table's "upsizes" entry). Returns as tly_admit_review_ledger().
*/
int tly_resv_upsize_review(tly_resv *r, const tly_store *state, const char *body, size_t len,
                           tly_admit_result *res, char *err, size_t errlen);

/* --reserve-upsizes' TIMEOUT as given (0: off). */
int64_t tly_resv_upsize_timeout(const tly_resv *r);

/* Prometheus text: tally_reservation_writes_total{result}, tally_reservation_reads_total, tally_claim_reservations. */
void tly_resv_metrics(tly_resv *r, FILE *out);
/* Reservations of the entry `key` at the last read or write. */
size_t tly_resv_count(tly_resv *r, const char *key);

#endif
