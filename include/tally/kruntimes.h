/*
** kruntimes.h: the kruntimes Run model: what a Run requests, what a Runtime
** Pod offers, and when a Runtime Pod can take Runs.
**
** These are the rules the scheduler (runsched.h), runtimed (runtimed.h),
** validate and admit share, so each lives in one place:
**
**  - A Run's request is spec.resources.requests with zero amounts dropped
**    and runs defaulted to 1 when absent or zero. Every value must be a
**    non-negative integer by Kubernetes' AsInt64 rule on its literal
**    ("1", "1k", "1e3", "1Ki" yes; "2000m", "1.0", "-1" no).
**  - A Runtime Pod's capacity comes from its annotations only:
**    kruntimes.io/capacity.<name> (names without '/', plus the seed's
**    kruntimes.io/capacity.example.com/gpu form, which a real API server
**    rejects but old clusters and the seed use), and the JSON object
**    annotation kruntimes.io/capacities ({"example.com/gpu": "1"}), which can
**    carry any name and wins over the per-resource form. Values that do not
**    parse or are not positive are ignored. runs defaults to 2; no other
**    resource has an implicit capacity.
**  - A Runtime Pod is available when it is Running, not terminating, its
**    first Ready condition is True, and runtimed's heartbeat
**    (kruntimes.io/RuntimedReady, True, lastProbeTime) is at most 15 s old.
*/
#ifndef TALLY_KRUNTIMES_H
#define TALLY_KRUNTIMES_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/diag.h"
#include "tally/objects.h"
#include "tally/resource.h"

#define TLY_KRT_CAPACITY_PREFIX "kruntimes.io/capacity."
#define TLY_KRT_CAPACITIES_ANNOTATION "kruntimes.io/capacities"
#define TLY_KRT_RUNTIMED_READY "kruntimes.io/RuntimedReady"
#define TLY_KRT_DEFAULT_RUNS 2
#define TLY_KRT_HEARTBEAT_STALE_SECONDS 15

typedef enum {
    TLY_RUN_PENDING = 0,
    TLY_RUN_SCHEDULED,
    TLY_RUN_RUNNING,
    TLY_RUN_READY,
    TLY_RUN_SUCCEEDED,
    TLY_RUN_FAILED,
    TLY_RUN_TIMEOUT,
    TLY_RUN_CANCELLED
} tly_run_phase;

/* The phase of a Run as decoded ("" and absent are Pending). */
tly_run_phase tly_run_phase_of(const tly_run *r);
const char *tly_run_phase_name(tly_run_phase p);
/* Scheduled, Running or Ready, with an assigned Pod: it consumes capacity. */
bool tly_run_is_active(const tly_run *r);

/*
** The Run's normalised request into *out (storage from arena a). On an
** invalid value returns TLY_EINVAL and sets *bad to the resource's name (the
** first in name order, so the message is the same on every run).
*/
int tly_run_normalized_request(const tly_run *r, tly_arena *a, tly_rlist *out, const char **bad);

/*
** A Runtime Pod's effective capacity into *out. Ignored annotation values
** become warnings in d when d is non-NULL.
*/
void tly_runtime_pod_capacity(const tly_pod *p, tly_names *names, tly_arena *a,
                              tly_rlist *out, tly_diags *d);

typedef enum {
    TLY_RPOD_AVAILABLE = 0,
    TLY_RPOD_NOT_RUNNING,       /* phase is not Running */
    TLY_RPOD_TERMINATING,       /* deletionTimestamp set */
    TLY_RPOD_NOT_READY,         /* no Ready condition, or the first is not True */
    TLY_RPOD_NO_RUNTIMED,       /* RuntimedReady missing or not True */
    TLY_RPOD_STALE_HEARTBEAT    /* RuntimedReady's lastProbeTime older than 15 s */
} tly_rpod_state;

/*
** Whether a Runtime Pod can take Runs at time `now` (Unix seconds). When
** have_clock is false (the input has no time at all), heartbeats count as fresh.
*/
tly_rpod_state tly_runtime_pod_state(const tly_pod *p, int64_t now, bool have_clock);
/* "not Running", "stale runtimed heartbeat", ... */
const char *tly_rpod_state_text(tly_rpod_state s);

#endif
