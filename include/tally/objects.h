/*
** objects.h: typed, compact C structs for the Kubernetes objects tally reads
** (contract section 2).
**
** Each struct starts with a tly_meta, so a pointer to any of them can be
** treated as a tly_meta * (kind, name, namespace, where it came from). All
** memory (strings, arrays, resource lists) lives in the state store's arena;
** the structs are never freed one by one.
**
** Only the fields the three designs need are kept. Absent values use
** explicit markers: TLY_NO_TIME for timestamps, has_* flags or tri-states
** (-1 unset, 0 false, 1 true) where "absent" and "zero" mean different things
** (a queue limit of 0 is a hard bound, an absent one is not set).
*/
#ifndef TALLY_OBJECTS_H
#define TALLY_OBJECTS_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/node.h"
#include "tally/quantity.h"
#include "tally/resource.h"

#define TLY_NO_TIME INT64_MIN

typedef enum {
    TLY_K_NODE = 0,
    TLY_K_POD,
    TLY_K_NAMESPACE,
    TLY_K_QUEUE,
    TLY_K_ACCOUNTED_RESOURCE,
    TLY_K_PODGROUP,
    TLY_K_PRIORITY_CLASS,
    TLY_K_RESOURCE_CLAIM,
    TLY_K_RESOURCE_CLAIM_TEMPLATE,
    TLY_K_RESOURCE_SLICE,
    TLY_K_DEVICE_CLASS,
    TLY_K_RUNTIME,
    TLY_K_RUN,
    TLY_K_CONFIG,
    TLY_K_COUNT
} tly_kind;

/* "Pod", "Queue", ... */
const char *tly_kind_name(int kind);
/* Whether objects of the kind live in a namespace. */
bool tly_kind_namespaced(int kind);
/* The kind's API group: "" for the core group, "scheduling.run.ai", ... */
const char *tly_kind_group(int kind);
/*
** The versions of the kind's group that tally reads, in order of preference,
** NULL-terminated (contract section 2): "v2", "v1alpha1" for Queue, ...
*/
const char *const *tly_kind_versions(int kind);
/* Whether version (without the group: "v2") is one tally reads for the kind. */
bool tly_kind_reads_version(int kind, const char *version);

/* Where something was read from: file (owned by the store), 1-based line and column. */
typedef struct {
    const char *file;
    uint32_t line, col;
} tly_src;

typedef struct {
    const char *key, *val;
} tly_kv;

typedef struct {
    tly_kv *v;
    uint32_t n;
} tly_kvs;

/* The value of key in kvs, or NULL. */
const char *tly_kvs_get(const tly_kvs *kvs, const char *key);

typedef struct {
    uint8_t kind;          /* a tly_kind */
    const char *api_version;
    const char *name;
    const char *ns;        /* NULL for cluster-scoped kinds */
    const char *uid;
    const char *resource_version;  /* as the API server sent it (live objects), or NULL */
    tly_kvs labels, annotations;
    int64_t created;       /* creationTimestamp, Unix seconds, or TLY_NO_TIME */
    int64_t deleted;       /* deletionTimestamp */
    tly_src src;           /* the start of the object */
    uint32_t errors;       /* decode errors recorded for this object (0 = clean) */
} tly_meta;

typedef struct {
    const char *type, *status, *reason, *message;
    int64_t last_probe, last_transition, last_heartbeat;
} tly_condition;

typedef struct {
    tly_condition *v;
    uint32_t n;
} tly_conditions;

/* The first condition of that type, or NULL. */
const tly_condition *tly_conditions_find(const tly_conditions *c, const char *type);

/* A label selector requirement or node selector requirement. */
typedef struct {
    const char *key;
    const char *op;        /* In, NotIn, Exists, DoesNotExist, Gt, Lt */
    const char **values;
    uint32_t nvalues;
} tly_selreq;

typedef struct {
    tly_selreq *reqs;      /* matchExpressions, ANDed */
    uint32_t nreqs;
    tly_kvs match_labels;  /* label selectors only */
    tly_selreq *fields;    /* node terms: matchFields (key metadata.name, In / NotIn), ANDed */
    uint32_t nfields;
    bool has_fields;       /* node terms with matchFields */
} tly_selector;

/*
** Whether labels satisfy the selector: every matchLabels pair and every
** requirement (In, NotIn, Exists, DoesNotExist; Gt/Lt compare integers).
** An empty selector matches everything.
*/
bool tly_selector_matches(const tly_selector *s, const tly_kvs *labels);

/* ---- v1 Node ---------------------------------------------------------- */

typedef struct {
    const char *key, *value, *effect;
} tly_taint;

typedef struct {
    tly_meta meta;
    tly_rlist allocatable;
    tly_taint *taints;
    uint32_t ntaints;
    bool unschedulable;
    int8_t ready;          /* -1 no Ready condition, 0 False/Unknown, 1 True */
    int64_t ready_heartbeat;
    tly_conditions conditions;
} tly_k8s_node;

/* ---- v1 Pod ----------------------------------------------------------- */

typedef struct {
    const char *name;
    tly_rlist requests, limits;
    bool restart_always;   /* init containers: a native sidecar */
} tly_container;

typedef struct {
    const char *name;
    bool has_resources;    /* status.containerStatuses[].resources.requests present */
    tly_rlist requests;    /* ... its value (what the kubelet actuated) */
    tly_rlist limits;
    bool has_allocated;    /* allocatedResources present */
    tly_rlist allocated;
} tly_container_status;

typedef struct {
    const char *key, *op, *value, *effect;
} tly_toleration;

typedef struct {
    const char *name;                /* the pod's name for the claim */
    const char *claim_name;          /* resourceClaimName, or NULL */
    const char *template_name;       /* resourceClaimTemplateName, or NULL */
} tly_pod_claim;

typedef struct {
    tly_meta meta;
    tly_container *containers;
    uint32_t ncontainers;
    tly_container *init_containers;
    uint32_t ninit;
    tly_rlist overhead;
    bool has_pod_resources;          /* spec.resources (pod-level) */
    tly_rlist pod_requests, pod_limits;
    const char *node_name;           /* spec.nodeName or NULL */
    tly_kvs node_selector;
    tly_selector *node_affinity_required;  /* terms, ORed */
    uint32_t nnode_affinity_required;
    bool has_pod_affinity;           /* podAffinity/podAntiAffinity required terms */
    bool has_topology_spread;        /* topologySpreadConstraints with DoNotSchedule */
    tly_toleration *tolerations;
    uint32_t ntolerations;
    const char *scheduler_name;      /* default "default-scheduler" */
    bool has_priority;
    int32_t priority;
    const char *priority_class_name;
    const char **gates;              /* schedulingGates names */
    uint32_t ngates;
    tly_pod_claim *claims;
    uint32_t nclaims;
    /* status */
    const char *phase;               /* Pending, Running, Succeeded, Failed, Unknown; NULL if absent */
    tly_conditions conditions;
    tly_container_status *statuses;
    uint32_t nstatuses;
    tly_container_status *init_statuses;
    uint32_t ninit_statuses;
    int64_t start_time;
} tly_pod;

/* ---- v1 Namespace ----------------------------------------------------- */

typedef struct {
    tly_meta meta;
} tly_namespace;

/* ---- scheduling.run.ai Queue ------------------------------------------ */

typedef struct {
    bool has_quota, has_limit, has_weight;
    tly_qty quota, limit, over_quota_weight;  /* KAI units: cpu millicores, memory MB, gpu devices */
} tly_queue_resource;

typedef struct {
    const char *ref;         /* resourceRef */
    bool has_limit;
    tly_qty limit;
    tly_src src;             /* the entry, for cross-object diagnostics */
} tly_queue_accref;

typedef struct {
    tly_meta meta;
    const char *parent;      /* spec.parentQueue or NULL */
    tly_src parent_src;
    const char *display_name;
    bool has_priority;
    int32_t priority;        /* default 100 */
    bool has_resources;      /* spec.resources present */
    tly_queue_resource cpu, memory, gpu;
    tly_queue_accref *accrefs;
    uint32_t naccrefs;
    int8_t admission_gating; /* spec.admissionGating: -1 unset, 0, 1 */
} tly_queue;

/* ---- scheduling.run.ai/v1alpha1 AccountedResource --------------------- */

typedef enum {
    TLY_SRC_NONE = 0,
    TLY_SRC_RESOURCE_NAME,
    TLY_SRC_DRA,
    TLY_SRC_POD_ANNOTATION
} tly_accsrc_kind;

typedef enum {
    TLY_ATTR_STRING = 0,
    TLY_ATTR_INT,
    TLY_ATTR_BOOL,
    TLY_ATTR_VERSION
} tly_attr_type;

typedef struct {
    const char *name;
    uint8_t type;            /* a tly_attr_type */
    const char *str;         /* string and version values */
    int64_t ival;
    bool bval;
} tly_attr;

typedef enum {
    TLY_QSRC_NONE = 0,
    TLY_QSRC_DRA_CAPACITY,   /* quantity.dra.selectedCapacity */
    TLY_QSRC_DRA_OPAQUE,     /* quantity.dra.opaqueConfigField */
    TLY_QSRC_POD_ANNOTATION  /* quantity.podAnnotation */
} tly_qsrc_kind;

typedef struct {
    uint8_t kind;                /* a tly_accsrc_kind */
    const char *resource_name;   /* TLY_SRC_RESOURCE_NAME */
    uint32_t resource_id;        /* interned resource_name */
    const char *device_class;    /* TLY_SRC_DRA */
    const char *annotation_key;  /* TLY_SRC_POD_ANNOTATION */
    const char *annotation_unit; /* podAnnotation.unit or NULL */
    tly_kvs match_node_labels;
    tly_attr *match_attrs;       /* match.dra.deviceAttributes */
    uint32_t nmatch_attrs;
    uint8_t qkind;               /* a tly_qsrc_kind */
    const char *capacity_name;   /* selectedCapacity.capacityName */
    const char *opaque_driver, *opaque_path, *opaque_unit;
    const char *qty_annotation_unit;  /* quantity.podAnnotation.unit */
    tly_src src;
} tly_accsrc;

typedef struct {
    tly_meta meta;
    bool has_default_limit;
    tly_qty default_limit;       /* -1 when absent */
    tly_accsrc *sources;
    uint32_t nsources;
} tly_accres;

/* ---- scheduling.run.ai/v2alpha2 PodGroup ------------------------------ */

typedef enum {
    TLY_PREEMPT_UNSET = 0,
    TLY_PREEMPT_PREEMPTIBLE,
    TLY_PREEMPT_NON_PREEMPTIBLE
} tly_preemptibility;

/*
** One of a PodGroup's spec.subGroups (KAI's hierarchical PodGroups). Pods
** join a leaf subgroup by the label kai.scheduler/subgroup-name. The tree is
** checked by the decoder: names unique, parents known, no cycles.
*/
typedef struct {
    const char *name;
    const char *parent;          /* NULL: a direct child of the PodGroup */
    int32_t parent_idx;          /* index in subgroups, -1 for the PodGroup */
    int32_t min_member;          /* -1 unset */
    int32_t min_subgroup;        /* -1 unset: every child is required */
    const char *required_topology; /* topologyConstraint.requiredTopologyLevel, or NULL */
} tly_subgroup;

typedef struct {
    tly_meta meta;
    const char *queue;
    int32_t min_member;          /* default 1 */
    bool min_member_set;
    int32_t min_subgroup;        /* -1 unset */
    tly_subgroup *subgroups;
    uint32_t nsubgroups;
    const char *required_topology; /* spec.topologyConstraint.requiredTopologyLevel, or NULL */
    const char *preferred_topology; /* spec.topologyConstraint.preferredTopologyLevel, or NULL */
    const char *priority_class_name;
    uint8_t preemptibility;      /* a tly_preemptibility */
} tly_podgroup;

/* ---- scheduling.k8s.io/v1 PriorityClass ------------------------------- */

typedef struct {
    tly_meta meta;
    int32_t value;
    bool global_default;
} tly_priority_class;

/* ---- resource.k8s.io DRA ---------------------------------------------- */

typedef struct tly_device_request tly_device_request;
struct tly_device_request {
    const char *name;
    const char *device_class;
    const char *allocation_mode;   /* "ExactCount" (default) or "All" */
    int64_t count;                 /* default 1 */
    const char **selectors;        /* CEL expressions */
    uint32_t nselectors;
    bool admin_access;             /* adminAccess: may use devices allocated to others */
    tly_toleration *tolerations;   /* of device taints; effect None/NoSchedule/NoExecute */
    uint32_t ntolerations;
    bool first_available;          /* uses firstAvailable (prioritized list) */
    tly_device_request *subs;      /* firstAvailable: the subrequests, in order of preference */
    uint32_t nsubs;
};

typedef struct {
    const char *request, *driver, *pool, *device;
    bool admin_access;             /* such a device stays free for other claims */
} tly_device_result;

/*
** spec.devices.constraints[i]: matchAttribute over the named requests
** ("req" or "req/sub"; none = every request). unsupported names a field
** tally does not evaluate (distinctAttribute, or no known field).
*/
typedef struct {
    const char **requests;
    uint32_t nrequests;
    const char *match_attribute;   /* fully qualified "domain/name" */
    const char *unsupported;
} tly_device_constraint;

typedef struct {
    const char *driver;
    const char **requests;         /* the requests it applies to; empty = all */
    uint32_t nrequests;
    tly_node *parameters;          /* opaque.parameters, deep-copied */
} tly_opaque_config;

typedef struct {
    tly_device_request *requests;
    uint32_t nrequests;
    tly_opaque_config *config;
    uint32_t nconfig;
    tly_device_constraint *constraints;
    uint32_t nconstraints;
} tly_claim_spec;

typedef struct {
    const char *resource, *name, *uid;
} tly_consumer_ref;

typedef struct {
    tly_meta meta;
    tly_claim_spec spec;
    bool allocated;                /* status.allocation present */
    tly_device_result *results;
    uint32_t nresults;
    tly_opaque_config *alloc_config;  /* status.allocation.devices.config */
    uint32_t nalloc_config;
    tly_consumer_ref *reserved_for;
    uint32_t nreserved_for;
    tly_selector *alloc_node_terms;   /* status.allocation.nodeSelector terms, ORed */
    uint32_t nalloc_node_terms;
    bool has_alloc_node_selector;
} tly_resource_claim;

typedef struct {
    tly_meta meta;
    tly_claim_spec spec;
} tly_claim_template;

typedef struct {
    const char *name;
    uint32_t id;                   /* interned */
    tly_qty value;
} tly_capacity;

/* A counter set: sharedCounters[i] of a slice, or consumesCounters[i] of a device. */
typedef struct {
    const char *name;              /* the set's name (consumesCounters: counterSet) */
    tly_capacity *counters;        /* name -> value */
    uint32_t ncounters;
} tly_counter_set;

typedef struct {
    const char *name;
    tly_attr *attrs;
    uint32_t nattrs;
    tly_capacity *capacity;
    uint32_t ncapacity;
    tly_taint *taints;             /* effect NoSchedule, NoExecute or None */
    uint32_t ntaints;
    tly_counter_set *consumes;     /* consumesCounters (partitionable devices) */
    uint32_t nconsumes;
    /* perDeviceNodeSelection slices: the device's own node selection */
    const char *node_name;
    bool all_nodes;
    tly_selector *node_terms;
    uint32_t nnode_terms;
    bool has_node_selector;
} tly_device;

typedef struct {
    tly_meta meta;
    const char *driver;
    const char *pool;
    const char *node_name;         /* NULL when allNodes or a node selector */
    bool all_nodes;
    tly_selector *node_terms;      /* spec.nodeSelector.nodeSelectorTerms, ORed */
    uint32_t nnode_terms;
    bool has_node_selector;
    tly_device *devices;
    uint32_t ndevices;
    int64_t generation;            /* spec.pool.generation */
    int64_t slice_count;           /* spec.pool.resourceSliceCount (0 when absent) */
    bool per_device_node_selection;
    tly_counter_set *counter_sets; /* sharedCounters */
    uint32_t ncounter_sets;
} tly_resource_slice;

typedef struct {
    tly_meta meta;
    const char **selectors;        /* CEL expressions */
    uint32_t nselectors;
} tly_device_class;

/* ---- kruntimes.io/v1alpha1 Runtime and Run ---------------------------- */

typedef struct {
    tly_meta meta;
    tly_rlist capacity;            /* spec.capacity.resources */
} tly_runtime;

typedef struct {
    const char *name;
    uint32_t id;
    const char *text;              /* the literal as written */
    tly_qty q;
    bool valid;                    /* a non-negative integer by AsInt64's rule */
    tly_src src;
} tly_run_request;

typedef struct {
    tly_selector selector;
    const char *topology_key;
    int32_t weight;                /* preferred terms; 0 for required */
} tly_run_affinity_term;

typedef struct {
    tly_meta meta;
    const char *runtime;
    bool has_resources;
    tly_run_request *requests;
    uint32_t nrequests;
    const char *mode;              /* "task" or "function" or NULL */
    tly_run_affinity_term *affinity_required, *affinity_preferred;
    uint32_t naffinity_required, naffinity_preferred;
    tly_run_affinity_term *anti_required, *anti_preferred;
    uint32_t nanti_required, nanti_preferred;
    /* The status message kruntimes writes when its PreFilter cannot compile
       the affinity ("pod selection failed: pre-filter run affinity: ..."),
       or NULL: with it, a Pending Run ends Failed. */
    const char *affinity_error;
    bool cancel_requested;         /* spec.cancelRequested */
    /* status */
    const char *phase;             /* NULL or "" means Pending */
    const char *assigned_pod;
    const char *message;
    tly_conditions conditions;
} tly_run;

/* ---- kai.scheduler/v1 Config ------------------------------------------ */

typedef struct {
    tly_meta meta;
    int8_t validate_quota;         /* -1 unset (means true) */
    int8_t block_upsize;           /* -1 unset (means false) */
    int8_t gpu_sharing;            /* spec.admission.gpuSharing, -1 unset */
    const char *gpu_sharing_mode;  /* spec.global.gpuSharingMode */
    const char *scheduler_name;
    const char *queue_label_key;
    int8_t gating_enabled;         /* spec.global.queueAdmissionGating.enabled, -1 unset */
} tly_config;

#endif
