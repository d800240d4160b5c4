/*
** queues.h: KAI queues as a policy: the queue tree, the ledger of what
** each queue (with its subtree) uses, and the checks that decide whether a
** workload may add a request to a queue (contract sections 2-3, kai-facts
** sections 1-2, the AccountedResource seed).
**
** The tree comes from spec.parentQueue. A queue whose parent is missing (or
** that sits in a parentQueue cycle) is unusable together with its subtree.
** Only leaf queues take workloads.
**
** Usage is kept per queue for its whole subtree: adding a pod's charge to a
** leaf adds it to every ancestor. Three kinds of usage:
**   allocated / allocatedNonPreemptible: every resource of the effective
**     requests (cpu, memory, GPUs as accepted, extended resources);
**   accounted[A]: what each AccountedResource A charges;
**   reserved (gating): requests of pods that passed the queue checks but fit
**     no node, counted for later pods of the same run.
**
** The checks, in KAI's fixed order: spec.resources limits (every workload),
** leaf to root, cpu then memory then gpu; then spec.resources quotas
** (non-preemptible workloads only, against allocatedNonPreemptible), same
** walk; then AccountedResource limits (every workload) leaf to root, in
** AccountedResource name order. `-1` is unlimited; any other value, 0
** included, is a hard bound; a zero request is never blocked; equality is
** admitted. The first failure is the answer, with KAI's message for it.
*/
#ifndef TALLY_QUEUES_H
#define TALLY_QUEUES_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/objects.h"
#include "tally/resource.h"
#include "tally/store.h"

typedef struct tly_queues tly_queues;

/* The three spec.resources dimensions, in KAI's check order. */
enum { TLY_QR_CPU = 0, TLY_QR_MEMORY = 1, TLY_QR_GPU = 2, TLY_QR_COUNT = 3 };

/* One AccountedResource charge: the resource (tly_queues_accres index) and the amount. */
typedef struct {
    uint32_t ar;
    tly_qty q;
} tly_acc_charge;

/*
** What a workload adds to its queues. The AccountedResource part comes in
** one of three forms, so that its cost follows the AccountedResources that
** concern the workload rather than how many exist:
**   acc_list set:   the packed charges (ascending ar); the rest are zero;
**   acc_idx set:    accounted[acc_idx[e]] for e < nacc_idx; the rest are
**                   zero whatever accounted holds there;
**   accounted only: one amount per AccountedResource (dense).
** Read them with tly_qcharge_nacc() / tly_qcharge_acc().
*/
typedef struct {
    tly_qty res[TLY_QR_COUNT];  /* cpu in cores, memory in bytes, gpu in devices (0.01 steps) */
    tly_rlist all;              /* every effective-request resource, for allocated (GPU as accepted) */
    tly_qty *accounted;         /* dense, in tly_queues_accres order; may be NULL */
    const uint32_t *acc_idx;
    uint32_t nacc_idx;
    const tly_acc_charge *acc_list;
    uint32_t nacc_list;
} tly_qcharge;

/* How many AccountedResource entries c lists (nacc: the number of AccountedResources). */
static inline uint32_t tly_qcharge_nacc(const tly_qcharge *c, uint32_t nacc)
{
    return c->acc_list ? c->nacc_list : c->acc_idx ? c->nacc_idx : c->accounted ? nacc : 0;
}

/* Entry e of c: returns the AccountedResource index, its amount in *q. */
static inline uint32_t tly_qcharge_acc(const tly_qcharge *c, uint32_t e, tly_qty *q)
{
    if (c->acc_list) {
        *q = c->acc_list[e].q;
        return c->acc_list[e].ar;
    }
    uint32_t a = c->acc_idx ? c->acc_idx[e] : e;
    *q = c->accounted[a];
    return a;
}

/* Outcome of a check. */
/* Which bound a check hit (for explanations). */
enum { TLY_QBOUND_LIMIT = 0, TLY_QBOUND_QUOTA = 1, TLY_QBOUND_ACCOUNTED = 2 };

typedef struct {
    bool quiet;           /* in: skip formatting the message (a check per candidate node) */
    bool ok;
    const char *reason;   /* OverLimit, NonPreemptibleOverQuota, AccountedResourceNotFound, QueueDoesNotExist, NonLeafQueue */
    char *message;        /* owned by the queues' arena; NULL when quiet */
    /* When a bound was hit (OverLimit / NonPreemptibleOverQuota): */
    int32_t queue;        /* the queue that failed (leaf or ancestor) */
    int bound;            /* TLY_QBOUND_* */
    int dim;              /* TLY_QR_* for limit/quota, the AccountedResource index otherwise */
    tly_qty used, bound_value, request;   /* usage (with reserved), the bound, the request */
} tly_qverdict;

tly_queues *tly_queues_create(tly_store *s);
/*
** Another reference to qs, for a set that several readers share (the live
** state's resize ledger, one per version: live.c). Each reference is given
** back with tly_queues_destroy(); the last one frees. Readers of a shared
** set only read it.
*/
tly_queues *tly_queues_retain(tly_queues *qs);
void tly_queues_destroy(tly_queues *qs);

/* Index of a queue by name, or -1. */
int32_t tly_queues_find(const tly_queues *qs, const char *name);
uint32_t tly_queues_count(const tly_queues *qs);
const tly_queue *tly_queues_queue(const tly_queues *qs, uint32_t i);
/* Parent index or -1. */
int32_t tly_queues_parent(const tly_queues *qs, uint32_t i);

/* The AccountedResources in name order. */
uint32_t tly_queues_naccres(const tly_queues *qs);
const tly_accres *tly_queues_accres(const tly_queues *qs, uint32_t a);

/*
** Whether a workload may use queue `name` at all: it exists, is usable (its
** ancestors exist) and is a leaf, and no queue on its path references a
** missing AccountedResource. On success returns the queue's index.
*/
int32_t tly_queues_admissible(tly_queues *qs, const char *name, tly_qverdict *v);

/*
** Checks adding c to leaf q (and every ancestor). `reserved` says whether the
** queues' reserved amounts count (queue-admission gating on).
*/
void tly_queues_check(tly_queues *qs, uint32_t q, const tly_qcharge *c, bool non_preemptible,
                      bool reserved, tly_qverdict *v);

/* Adds (sign 1) or removes (sign -1) c on q and its ancestors. */
void tly_queues_charge(tly_queues *qs, uint32_t q, const tly_qcharge *c, bool non_preemptible,
                       int sign);
/* Adds c to the reserved amounts of q and its ancestors. */
void tly_queues_reserve(tly_queues *qs, uint32_t q, const tly_qcharge *c, bool non_preemptible);

/*
** Queue-admission gating (contract section 3): one predicate for simulate's
** verdicts, `/mutate/pods` and the gating controller. The mode is the flag
** --queue-admission-gating where given (tly_store_set_gating_mode), else off
** when the Config sets spec.global.queueAdmissionGating.enabled: false, else
** all. In `all` (tally's default) every queue is gated except those that opt
** out (label kai.scheduler/queue-admission-gating: "false", or
** spec.admissionGating: false); in `opt-in` (KAI's design) only queues with
** the label "true" or spec.admissionGating: true.
*/
typedef enum {
    TLY_GATING_UNSET = 0,  /* no flag: the Config decides */
    TLY_GATING_ALL,
    TLY_GATING_OPT_IN,
    TLY_GATING_OFF
} tly_gating_mode;
/* "all", "opt-in", "off" -> the mode, or TLY_GATING_UNSET for anything else. */
tly_gating_mode tly_gating_mode_parse(const char *s);
const char *tly_gating_mode_name(tly_gating_mode m);
/* The mode in effect for state s. */
tly_gating_mode tly_gating_mode_of(const tly_store *s);
/* Whether queue `q` is gated under mode m (m resolved, not UNSET). */
bool tly_queue_gated(tly_gating_mode m, const tly_queue *q);
/* Whether queue-admission gating applies to leaf q (the predicate above). */
bool tly_queues_gating(const tly_queues *qs, uint32_t q);

/* For output: the subtree sums and the limits. */
const tly_rvec *tly_queues_allocated(const tly_queues *qs, uint32_t q);
const tly_rvec *tly_queues_allocated_np(const tly_queues *qs, uint32_t q);
tly_qty tly_queues_accounted_used(const tly_queues *qs, uint32_t q, uint32_t a);
/* The effective limit of q for AccountedResource a: entry, else defaults.limit, else -1. */
tly_qty tly_queues_accounted_limit(const tly_queues *qs, uint32_t q, uint32_t a);
/*
** Queue q's own spec.resources bound for dimension r (quota when limit is
** false), in cores / bytes / devices: false when unbounded.
*/
bool tly_queues_bound(const tly_queues *qs, uint32_t q, bool limit, int r, tly_qty *out);
/* Queue q's subtree usage in dimension r (allocated, or allocatedNonPreemptible). */
tly_qty tly_queues_used(const tly_queues *qs, uint32_t q, int r, bool non_preemptible);
/* Whether queue q has spec.resources. */
bool tly_queues_has_resources(const tly_queues *qs, uint32_t q);

/* Whether AccountedResource a is the reserved gpu-memory. */
bool tly_queues_accres_is_gpu_memory(const tly_queues *qs, uint32_t a);
/* NULL when every reference resolves, else the first missing resourceRef. */
const char *tly_queues_missing_ref(const tly_queues *qs, uint32_t q);

#endif
