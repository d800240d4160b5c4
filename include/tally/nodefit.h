/*
** nodefit.h: whether a pod may go to a node at all (the static predicates),
** and the node's GPU devices for KAI GPU sharing.
**
** Static predicates, in kube-scheduler's filter order (the first failure is
** the reason): the node is schedulable (spec.unschedulable false) and Ready
** (Ready condition True); taints with effect NoSchedule or NoExecute are all
** tolerated (PreferNoSchedule is ignored); nodeSelector labels all match;
** required node affinity (one of the nodeSelectorTerms matches; a term that
** uses matchFields is not evaluated and never matches).
**
** GPU devices (tly_gpus): a node with allocatable nvidia.com/gpu (or
** amd.com/gpu) N has N devices, each with 100 hundredths and the node's GPU
** memory (label nvidia.com/gpu.memory in MiB, values >= 1 TiB-in-MiB treated
** as bytes, floored to a multiple of 100 MiB as KAI does). Whole-GPU pods take
** devices that are entirely free; shared pods (fraction or gpu-memory) pack
** onto devices that already hold shared work before opening a free one
** (KAI's bin-packing of fractions), each of their gpu_devices on a different
** device. A device that holds shared work is not free for a whole-GPU pod.
** The pods already running are laid out by tly_gpus_layout: by their GPU
** group labels where KAI's binder wrote them, never by their names.
*/
#ifndef TALLY_NODEFIT_H
#define TALLY_NODEFIT_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/objects.h"
#include "tally/podreq.h"

typedef enum {
    TLY_FIT_OK = 0,
    TLY_FIT_UNSCHEDULABLE,     /* spec.unschedulable */
    TLY_FIT_NOT_READY,         /* Ready condition not True */
    TLY_FIT_NODE_SELECTOR,     /* nodeSelector does not match */
    TLY_FIT_NODE_AFFINITY,     /* required node affinity does not match */
    TLY_FIT_TAINT              /* an untolerated NoSchedule/NoExecute taint */
} tly_fit_result;

/* The static predicates; *taint (may be NULL) is the first untolerated taint. */
/* Whether node n satisfies one nodeSelectorTerm (labels and metadata.name). */
bool tly_node_term_matches(const tly_selector *term, const tly_k8s_node *n);

tly_fit_result tly_nodefit_static(const tly_pod *p, const tly_k8s_node *n, const tly_taint **taint);
/* "node(s) were unschedulable", "node(s) didn't match Pod's node affinity/selector", ... */
const char *tly_fit_result_text(tly_fit_result r);
/* Whether toleration list tolerates the taint (Kubernetes' rules). */
bool tly_tolerates(const tly_toleration *tol, uint32_t ntol, const tly_taint *t);

/* A node's GPU memory per device in MiB (0 when the label is missing or bad). */
uint64_t tly_node_gpu_memory_mib(const tly_k8s_node *n);

typedef struct {
    uint32_t ndev;
    uint32_t *free;            /* hundredths free per device (100 = untouched) */
    uint64_t *free_mem;        /* MiB free per device */
    bool *shared;              /* holds fraction or gpu-memory work */
    uint64_t mem_mib;          /* per device; 0 when unknown */
} tly_gpus;

/* Devices of node n (count from allocatable nvidia.com/gpu, or amd.com/gpu). */
void tly_gpus_init(tly_gpus *g, const tly_k8s_node *n);
void tly_gpus_free(tly_gpus *g);
void tly_gpus_copy(tly_gpus *dst, const tly_gpus *src);
/* Number of devices with nothing on them. */
uint32_t tly_gpus_whole_free(const tly_gpus *g);
/*
** Whether r's GPU part fits; when it does and `take` is true, it is placed
** (devices chosen deterministically: lowest index among the best). For a
** gpu-memory request on a node without known GPU memory: does not fit.
*/
bool tly_gpus_place(tly_gpus *g, const tly_podreq *r, bool take);
/* Total hundredths in use on the node (whole devices count 100). */
uint64_t tly_gpus_used_hundredths(const tly_gpus *g);

/*
** One running pod's GPU part on a node, for tly_gpus_layout: its request
** and the shared devices KAI's binder put it on (the values of its labels
** runai-gpu-group and runai-gpu-group/<anything>; distinct, in strcmp
** order; none when the pod carries no such label).
*/
typedef struct {
    const tly_podreq *req;
    const char *const *groups;
    uint32_t ngroups;
} tly_gpu_use;

/*
** Puts the running pods `uses` on the devices of g, which must be fresh from
** tly_gpus_init, as they are laid out in the cluster, whatever the pods are
** called: whole-GPU pods first; then one device per GPU group, charged the
** sum of its pods' shares; then shares without a group, largest first, packed
** as tly_gpus_place packs them. uses is reordered. A pod that cannot be laid
** out (the input puts more on the node than it has) still takes what is left:
** its share goes to the device with the most room, down to nothing, so a
** node is never offered more than it has. Returns how many pods (per group,
** for shared pods) that was: 0 for a node laid out as KAI would have.
*/
uint32_t tly_gpus_layout(tly_gpus *g, tly_gpu_use *uses, uint32_t n);

#endif
