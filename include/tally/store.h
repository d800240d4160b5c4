/*
** store.h: the cluster state store.
**
** One store holds every object of one input (files, directories, a review's
** state), decoded into the typed structs of objects.h, indexed by
** kind/namespace/name and by the relations the engines need: pods by node,
** pods by queue, Runs by runtime, Runtime Pods by runtime. `simulate`,
** `admit`, `validate` and `serve` all read their input through it.
**
** Lifetime: tly_store_create(), any number of tly_store_load_*() calls,
** tly_store_finish() (sorts, resolves duplicates, builds indexes), then
** read-only use, then tly_store_destroy(). A finished store is never
** modified, so one can be shared by many threads (the webhook swaps whole
** stores on reload).
**
** Input rules (contract section 2): directories are walked recursively for
** *.yaml, *.yml, *.json in byte order of the full path; a file may hold
** several documents; a document may be a List (any kind ending in "List")
** whose items are objects. Unknown kinds are skipped with a note. The same
** (kind, namespace, name) twice: the later one wins, with a note and a
** warning for validate.
*/
#ifndef TALLY_STORE_H
#define TALLY_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/arena.h"
#include "tally/diag.h"
#include "tally/objects.h"
#include "tally/resource.h"

typedef struct tly_store tly_store;

/* Documented input limits (docs/input.md). */
#define TLY_MAX_DEPTH 64            /* nesting of maps and lists in one object */
#define TLY_MAX_SCALAR (16u << 20)  /* bytes in one scalar */
#define TLY_MAX_OBJECT_NODES (1u << 22)  /* nodes in one object's tree */

tly_store *tly_store_create(void);
/*
** The same, for a store that will hold one object (a webhook's review): its
** arena takes small blocks. A 1 MiB block per review came from mmap and went
** back with munmap, and the TLB shootdowns that munmap sends to every core
** were the webhook's largest cost (docs/performance.md, the webhook section).
** names NULL: the store makes its own table; else it shares names (which
** must outlive it), so that two objects compared id by id (a resize's old
** and new pod) number their resources alike.
*/
tly_store *tly_store_create_one(tly_names *names);
void tly_store_destroy(tly_store *s);

tly_names *tly_store_names(tly_store *s);
tly_diags *tly_store_diags(tly_store *s);
tly_arena *tly_store_arena(tly_store *s);

/*
** Loads a file or a directory. Problems become diagnostics; returns the number
** of errors (unreadable files, syntax errors, objects that did not decode)
** this call recorded, so 0 means clean.
*/
int tly_store_load_path(tly_store *s, const char *path);
/* Loads YAML or JSON text; `name` is what diagnostics call the input. */
int tly_store_load_string(tly_store *s, const char *name, const char *text, size_t len);
/*
** Loads JSON text (one or more JSON values, such as a LIST response page)
** with the native JSON reader: a List's items are decoded one at a time, so
** memory holds the store plus one object's tree. `name` is what
** diagnostics call the input; returns the number of errors recorded.
*/
int tly_store_load_json(tly_store *s, const char *name, const char *buf, size_t len);

/*
** Decodes one object from an already parsed tree (an AdmissionReview's
** request.object) into the store; `name` is what diagnostics call it.
** Returns the number of errors recorded.
*/
int tly_store_load_object(tly_store *s, const char *name, const tly_node *root);

/* Sorts every kind by (namespace, name), drops replaced duplicates, builds indexes. */
void tly_store_finish(tly_store *s);

/* Objects of a kind, in (namespace, name) order once finished. */
uint32_t tly_store_count(const tly_store *s, int kind);
void *tly_store_at(const tly_store *s, int kind, uint32_t i);
/* One object by kind, namespace (NULL for cluster-scoped) and name; NULL if absent. */
void *tly_store_find(const tly_store *s, int kind, const char *ns, const char *name);

/* The pods whose spec.nodeName is `node` (any phase). */
tly_pod *const *tly_store_pods_on_node(const tly_store *s, const char *node, uint32_t *n);
/*
** A structure derived from a finished store, built once on first use and
** freed with the store (e.g. the queues' ledger of the bound pods, which
** every resize decision against this state reads). Thread-safe: concurrent
** callers get the same object; build runs once. Slots: TLY_DERIVED_*.
*/
enum { TLY_DERIVED_RESIZE_LEDGER = 0 };
void *tly_store_derived(tly_store *s, int slot, void *(*build)(tly_store *s),
                        void (*destroy)(void *));

/* Runs whose spec.runtime is `runtime` in namespace `ns`. */
tly_run *const *tly_store_runs_of_runtime(const tly_store *s, const char *ns,
                                          const char *runtime, uint32_t *n);
/* Pods labelled runtime=<runtime> in namespace `ns` (Runtime Pods). */
tly_pod *const *tly_store_runtime_pods(const tly_store *s, const char *ns,
                                       const char *runtime, uint32_t *n);

/*
** The input's clock (contract section 2): the newest creation and deletion
** timestamp, pod startTime and condition time (lastProbeTime,
** lastTransitionTime, lastHeartbeatTime) of any object. TLY_NO_TIME when the
** input holds no time at all.
*/
int64_t tly_store_newest_time(const tly_store *s);

/*
** A clock the input declares: a snapshot's top-level `now`, or the Date of
** the first LIST of a live read. TLY_NO_TIME when none was set. Commands
** use it before the newest time (`--now` still wins).
*/
void tly_store_set_clock(tly_store *s, int64_t t);
int64_t tly_store_clock(const tly_store *s);

/* The kai.scheduler/v1 Config in the input, or NULL. */
const tly_config *tly_store_config(const tly_store *s);

/*
** tally's scheduler name (Config spec.global.schedulerName, else
** "kai-scheduler") and queue label key (else "kai.scheduler/queue").
** A command-line flag overrides the scheduler name via tly_store_set_scheduler_name()
** before tly_store_finish().
*/
const char *tly_store_scheduler_name(const tly_store *s);
void tly_store_set_scheduler_name(tly_store *s, const char *name);
const char *tly_store_queue_label_key(const tly_store *s);
/*
** The --queue-admission-gating flag (a tly_gating_mode of queues.h; 0 when
** not given: the Config decides). Set before tly_store_finish().
*/
void tly_store_set_gating_mode(tly_store *s, int mode);
int tly_store_gating_mode(const tly_store *s);

/*
** The queue of one of tally's pods (contract section 2): the PodGroup's
** spec.queue when annotation pod-group-name names a PodGroup in the input,
** else the queue label, else "default-queue". Also returns the PodGroup
** (or NULL) through *pg when pg is non-NULL.
*/
const char *tly_store_pod_queue(const tly_store *s, const tly_pod *p, const tly_podgroup **pg);
/*
** While loading: read CustomResourceDefinitions into crds (crd.h) and keep a
** copy of every object a CRD may define, for `validate` (the store does not
** own crds). Without it the store reads the CRDs of its input into a set of
** its own and keeps no objects.
*/
struct tly_crdset;
void tly_store_set_crds(tly_store *s, struct tly_crdset *crds);
/* A view's CRDs (not owned: the backend keeps them alive as long as the view). */
void tly_store_use_crds(tly_store *s, const struct tly_crdset *crds);
/* The CustomResourceDefinitions read (NULL when there were none): admit checks objects against them. */
const struct tly_crdset *tly_store_crds(const tly_store *s);

/*
** Whether tally places this pod: its schedulerName is tally's, and it is not
** one of KAI's GPU-sharing reservation pods, which KAI's binder creates on a
** node for each shared device and no queue is charged for.
*/
bool tly_store_is_tally_pod(const tly_store *s, const tly_pod *p);
/*
** A KAI GPU-sharing reservation pod: label app is kai-resource-reservation
** (KAI's default appLabel) or runai-reservation (its name before KAI). Such
** a pod holds a device for the fraction pods that share it; their shares are
** what the device carries, so its own GPUs are not counted again.
*/
bool tly_pod_is_gpu_reservation(const tly_pod *p);
/* tally's pods whose queue is `queue`, once finished. */
tly_pod *const *tly_store_pods_in_queue(const tly_store *s, const char *queue, uint32_t *n);

/*
** A store over another source of objects: a fork of the live state
** (src/live/). Everything above works on it unchanged, reading through the
** backend: count and find directly, at() from an array of the kind's objects
** built on first use, the Runtime Pod index through its own call, and the
** derived slots through derived() first (the live ledger gives the resize
** ledger this way, without a pass over every pod). Such a store is finished
** from the start and read-only; destroying it calls release().
*/
typedef struct {
    uint32_t (*count)(void *ctx, int kind);
    void *(*find)(void *ctx, int kind, const char *ns, const char *name);
    /* Every object of the kind in (namespace, name) order, into out[0..count). */
    void (*list)(void *ctx, int kind, void **out);
    /* Runtime Pods of (ns, runtime) in name order into a malloc'd array; returns the count. */
    uint32_t (*runtime_pods)(void *ctx, const char *ns, const char *runtime, tly_pod ***out);
    /* A derived structure the backend keeps itself, or NULL to build it as usual. */
    void *(*derived)(void *ctx, tly_store *s, int slot, void (**destroy)(void *));
    void (*release)(void *ctx);
    /* The newest resourceVersion of the kind the source has seen, as an integer (0: unknown); may be NULL. */
    uint64_t (*seen_rv)(void *ctx, int kind);
} tly_store_backend;

/* names is shared with the backend's objects (tly_names is thread-safe); scheduler_name may be NULL. */
tly_store *tly_store_create_view(const tly_store_backend *b, void *ctx, tly_names *names,
                                 const tly_config *config, const char *scheduler_name);
/* The backend context of a view, or NULL for an ordinary store. */
void *tly_store_view_ctx(const tly_store *s);

/*
** How far a state has followed the cluster for one kind: the highest
** resourceVersion, read as a decimal integer, of every LIST and watch event
** of that kind it holds; 0 when unknown (a store read from files). Kubernetes
** calls resourceVersions opaque, but every etcd-backed API server makes them
** the store's revision, so two of one kind order; tally uses this only to
** know whether a state is new enough to settle a reservation (upsize.h).
*/
uint64_t tly_store_seen_rv(const tly_store *s, int kind);
/* A resourceVersion as that integer; 0 when it is not a plain decimal number. */
uint64_t tly_rv_number(const char *rv);

#endif
