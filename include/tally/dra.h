/*
** dra.h: Dynamic Resource Allocation for the pod placement engine: which
** devices a pod's ResourceClaims get on a candidate node, what they charge,
** and who may share a claim (issue 4 "DRA", contract section 2, kai-facts
** 3.6, the AccountedResource seed's "Shared DRA ResourceClaims").
**
** Objects read (resource.k8s.io v1, v1beta2, v1beta1; decode_dra.c has
** already unified their shapes): ResourceSlices (devices per node),
** DeviceClasses (selectors), ResourceClaims (requests, allocation results,
** reservedFor) and ResourceClaimTemplates.
**
** Lifetime and ownership: tly_dra_create() reads a finished store and keeps
** pointers into it, so the store must outlive the tly_dra. Everything the
** tly_dra allocates (compiled selectors, messages returned through `char **`
** or `const char **`) is owned by it and freed by tly_dra_destroy(). A
** tly_dra_choice is owned by the caller: tly_dra_choice_init() before use,
** tly_dra_choice_free() after; one choice may be reused for any number of
** tly_dra_try() calls.
**
** The engine's use, per pod:
**   1. tly_dra_claim_queue_check(): a claim shared with another queue
**      rejects the pod (SharedResourceClaimAcrossQueues), whatever the node.
**   2. For each candidate node, tly_dra_try(): 1 fits, 0 does not fit on
**      that node (node-fit failure), -1 unsupported on every node
**      (UnsupportedConstraint). On success the choice lists the devices.
**   3. tly_dra_gpu_devices(), tly_dra_gpu_memory(), tly_dra_charges():
**      the GPU count and AccountedResource charges of the choice.
**   4. tly_dra_commit() when the pod is placed; tly_dra_undo() (in reverse
**      order) when a gang is rolled back.
** Bound pods: run each through tly_dra_try() with its spec.nodeName and
** tly_dra_commit(), so their claims count as used by, and charged to, their
** queue before pending pods are placed.
**
** Not thread-safe: tly_dra_try() writes scratch marks into the tly_dra.
*/
#ifndef TALLY_DRA_H
#define TALLY_DRA_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/objects.h"
#include "tally/quantity.h"
#include "tally/queues.h"
#include "tally/store.h"

typedef struct tly_dra tly_dra;

/* One device chosen for (or allocated to) a claim request. */
typedef struct {
    const char *request;         /* the claim's request name (as in allocation results) */
    const char *device_class;    /* the request's deviceClassName; NULL when unknown */
    const char *driver, *pool, *device;
    const tly_device *dev;       /* the slice's device; NULL when no ResourceSlice lists it */
    uint32_t index;              /* internal device index, UINT32_MAX when dev is NULL */
    bool admin_access;           /* adminAccess: shares the device, does not hold it */
} tly_dra_dev;

/* One claim of the pod and its devices. */
typedef struct {
    const char *ns, *name;       /* the claim; for a template claim "<pod>-<podClaimName>" */
    const char *pod_claim;       /* the pod's name for the claim (spec.resourceClaims[].name) */
    const tly_resource_claim *claim;     /* the claim object, NULL for a fresh template claim */
    const tly_claim_template *tmpl;      /* the template, for template claims */
    const tly_claim_spec *spec;  /* whose requests the devices satisfy */
    uint32_t state;              /* internal claim state index, UINT32_MAX for private claims */
    bool from_template;          /* private to the pod: never shared, always charged */
    bool preallocated;           /* allocated in the input or by an earlier commit */
    bool charge;                 /* counts in charges (false: already charged to the queue) */
    uint32_t first, ndevs;       /* the claim's devices: devs[first .. first + ndevs) */
} tly_dra_claim_choice;

/* The outcome of tly_dra_try(): the pod's claims and devices on one node. */
typedef struct {
    const tly_pod *pod;
    const char *node;
    const char *queue;           /* as given to tly_dra_try(), may be NULL */
    tly_dra_claim_choice *claims;
    uint32_t nclaims, cap_claims;
    tly_dra_dev *devs;
    uint32_t ndevs, cap_devs;
    char why[1024];              /* the reason *why points to, when formatted per call */
} tly_dra_choice;

tly_dra *tly_dra_create(tly_store *s);
void tly_dra_destroy(tly_dra *d);

void tly_dra_choice_init(tly_dra_choice *c);
void tly_dra_choice_free(tly_dra_choice *c);
/* dst (initialised) becomes a copy of src, e.g. to keep a gang member's choice for undo. */
void tly_dra_choice_copy(tly_dra_choice *dst, const tly_dra_choice *src);

/*
** Whether pod p's claims can be satisfied on node `node`, and with which
** devices (out). For each spec.resourceClaims entry:
**   - resourceClaimName: the claim in the pod's namespace. Allocated (in the
**     input or by an earlier commit): it fits only if its devices are on
**     this node's slices. Unallocated: devices are chosen as below.
**   - resourceClaimTemplateName: a claim private to the pod with the
**     template's spec (or, for a bound pod, the claim Kubernetes generated
**     from it: annotation resource.kubernetes.io/pod-claim-name and the pod
**     in reservedFor).
** Choosing devices, as the Kubernetes allocator does (dra.c's essay and
** docs/pods.md): ExactCount takes `count` devices, All every matching
** device reachable from the node (at least one, none in use, at most 32
** per claim); candidates pass the class and request selectors, taints and
** pool validity; counters and matchAttribute constraints must hold; the
** search backtracks across requests, firstAvailable subrequests and claims,
** and tries devices in (slice name, device name) order.
** queue (may be NULL) is the pod's queue: a shared claim already charged to
** it gets charge = false.
** Returns 1 (fits), 0 (does not fit here; *why says why), -1 (unsupported:
** a selector outside tally's CEL subset or a constraint other than
** matchAttribute; *why quotes it) or TLY_DRA_BOUND: the search on this node
** stopped at tally's bound of device trials (*why says so). As Kubernetes'
** filter timeout refuses the node it ran out on, the engine refuses this
** node and tries the others; a pod placed nowhere after that was not
** evaluated (UnsupportedConstraint), not proven unschedulable.
** *why points into out->why or into d, valid until the next call with out.
*/
#define TLY_DRA_BOUND (-2)
int tly_dra_try(tly_dra *d, const tly_pod *p, const char *node, const char *queue,
                tly_dra_choice *out, const char **why);

/*
** Device trials every tly_dra_try() from now on may use together (the
** pod's budget; UINT64_MAX, the default, for none). A search that finds
** the budget short stops early with TLY_DRA_BOUND and says the pod's bound
** was used up: with the per-node bound alone, a pod whose claims fit
** nowhere could cost nodes x 200,000 trials.
*/
void tly_dra_set_budget(tly_dra *d, uint64_t trials);

/*
** For benchmarks: the most device trials one search of tly_dra_try() made
** (the bound is 200,000), the trials of all searches and how many searches
** ran (one per pod and node whose claims tally allocates), since d was made.
*/
void tly_dra_search_stats(const tly_dra *d, uint64_t *max, uint64_t *total, uint64_t *tries);

/*
** The pod's first claim or template that did not decode (an unknown
** allocation mode, an empty selector, ...), as a sentence owned by d, or
** NULL. Such a pod is Invalid (InvalidResources): tally never allocates
** from a claim it could not read.
*/
const char *tly_dra_pod_invalid(const tly_dra *d, const tly_pod *p);

/*
** Records a placement: newly chosen devices become used, a named claim
** allocated by the choice stays allocated on that node for later pods, the
** queue becomes a user of the named claims and, when charge is set, they
** count as charged to it.
*/
void tly_dra_commit(tly_dra *d, const tly_dra_choice *c);
/* Reverts tly_dra_commit(c). Undo a gang's commits in reverse order. */
void tly_dra_undo(tly_dra *d, const tly_dra_choice *c);

/*
** Devices of the choice (claims with charge set) that are GPUs: the
** request's device class or the driver contains "gpu", case-insensitively
** (KAI's rule, kai-facts 3.6).
*/
uint32_t tly_dra_gpu_devices(const tly_dra_choice *c);

/*
** The GPUs pod p's claims ask for, counted as KAI's workload-level check
** counts them, before any node is chosen: for each request of a GPU class
** (tly_dra_is_gpu_name), ExactCount its count and All 1; firstAvailable
** requests count nothing (the device is known only on a node). A claim
** shared by name and already charged to `queue` counts once per queue, as
** tally charges it.
*/
uint32_t tly_dra_job_gpus(const tly_dra *d, const tly_pod *p, const char *queue);
/*
** The reserved gpu-memory charge of the choice: the `memory` capacity of
** each GPU device of claims with charge set (bytes, BinarySI).
*/
tly_qty tly_dra_gpu_memory(const tly_dra_choice *c);

/*
** Adds the `dra` sources' charges of the choice to out[a], for every
** AccountedResource a in tly_queues_accres order (out has
** tly_queues_naccres(qs) entries; other sources are the caller's). Per
** device of claims with charge set whose request class equals the source's
** deviceClassName and that has every match.dra.deviceAttributes value:
** 1, or the device's capacity named quantity.dra.selectedCapacity, or the
** number at quantity.dra.opaqueConfigField.path in the claim's opaque
** config for that driver times its unit. The reserved gpu-memory is
** skipped here: add tly_dra_gpu_memory() to it.
** *problem (may be NULL) gets a sentence about an opaque value that is not
** a number (that source then charges nothing for the device), or NULL.
*/
void tly_dra_charges(const tly_dra *d, const tly_queues *qs, const tly_pod *p,
                     const tly_dra_choice *c, tly_qty *out, const char **problem);

/*
** Shared claims (referenced by name): false when a claim of p is already
** used by a pod of another queue (reservedFor consumers of the input,
** the claim's kai.scheduler/queue label, pods committed in this run, or
** tly_dra_claim_note_user()); *message (owned by d) is then
** "ResourceClaim <ns>/<claim> is shared with queue <other>; pods of queue
** <queue> cannot use it". Reason: SharedResourceClaimAcrossQueues.
*/
bool tly_dra_claim_queue_check(tly_dra *d, const tly_pod *p, const char *queue, char **message);
/* Records that a pod of `queue` uses claim ns/name (no effect on unknown claims). */
void tly_dra_claim_note_user(tly_dra *d, const char *ns, const char *name, const char *queue);
/* Whether claim ns/name's devices were already charged to `queue` (charge once per queue). */
bool tly_dra_claim_charged(const tly_dra *d, const char *ns, const char *name, const char *queue);
void tly_dra_claim_mark_charged(tly_dra *d, const char *ns, const char *name, const char *queue);

/* Devices of GPU-driver slices on the node (KAI adds them to the node's GPU capacity). */
uint32_t tly_dra_node_gpu_devices(const tly_dra *d, const char *node);

/*
** The CEL subset on its own (for validation and tests): compiles expr and
** evaluates it against a device of `driver`. Returns 1 match, 0 no match,
** -1 unsupported (*why, owned by d, quotes the expression).
*/
int tly_dra_cel_eval(tly_dra *d, const char *expr, const char *driver, const tly_device *dev,
                     const char **why);

/* KAI's GPU test: lower(name) contains "gpu". NULL is not a GPU. */
bool tly_dra_is_gpu_name(const char *name);

#endif
