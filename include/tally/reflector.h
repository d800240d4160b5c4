/*
** reflector.h: the live state fed by the API server, one reflector per
** kind (src/live/reflector.c; contract section 9; docs/live.md).
**
** Each reflector runs on a thread of its own:
**
**   discover --(absent)--> wait, discover again
**      | served
**      v
**   LIST (paginated) -> every item applied, what vanished deleted -> synced
**      |
**      v
**   WATCH ?resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=T
**      events applied as they arrive; RV follows every event and bookmark
**      | stream ends (timeout)          -> WATCH again from RV
**      | broken, 5xx, silent too long   -> backoff (doubling, jittered), WATCH again
**      | ERROR 410 / HTTP 410 (expired) -> LIST again (a relist)
**      | 404 (the CRD was removed)      -> every object deleted; discover again
**
** A watch counts as broken from the first failure until a stream is open
** again; readiness (every kind synced, none broken for longer than
** --watch-stale-after) is what `tally serve` answers /readyz and the
** admission endpoints with.
*/
#ifndef TALLY_REFLECTOR_H
#define TALLY_REFLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tally/kube.h"
#include "tally/live.h"

typedef struct tly_reflectors tly_reflectors;

typedef struct {
    tly_kube *kube;             /* not owned */
    tly_live *live;             /* not owned */
    long watch_timeout_s;       /* timeoutSeconds of a WATCH; 0: 300 to 600 at random, as client-go */
    long idle_ms;               /* a watch with no byte for this long is restarted; 0: 90 s */
    long recheck_ms;            /* an absent kind is discovered again after this; 0: 30 s */
    long backoff_max_ms;        /* 0: 30 s */
    uint32_t page;              /* LIST page size; 0: 500 */
    /* Logs one event (level: tly_log_level of server.h). May be NULL. */
    void (*log)(void *ctx, int level, const char *event, const char *kind, const char *msg);
    void *log_ctx;
} tly_reflectors_options;

/* Starts a reflector per kind (they discover, list and watch on their own threads). */
tly_reflectors *tly_reflectors_start(const tly_reflectors_options *o);
/* Stops every reflector (their threads end within about a second). */
void tly_reflectors_stop(tly_reflectors *r);

/*
** Ready: every kind has been listed (or is absent), and no watch has been
** broken for longer than stale_ms. When not, why says which kind and what.
*/
bool tly_reflectors_ready(const tly_reflectors *r, long stale_ms, char *why, size_t whylen);

/* Prometheus text for the watch metrics of contract section 9. */
void tly_reflectors_metrics(const tly_reflectors *r, FILE *out);

/* Counters of one kind (tests). */
typedef struct {
    bool served, synced;
    uint64_t added, modified, deleted, bookmarks, errors;
    uint64_t lists, relists, restarts;
    int64_t broken_ms;          /* how long the watch has been broken now, or 0 */
} tly_reflector_stats;
void tly_reflectors_stats(const tly_reflectors *r, int kind, tly_reflector_stats *out);

#endif
