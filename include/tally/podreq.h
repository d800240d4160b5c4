/*
** podreq.h: what a pod asks for, in one definition used everywhere (node
** fit, queue allocated, AccountedResources, admission): contract section 2,
** "Effective requests".
**
**  - Kubernetes' effective requests (k8s-pod-requests.md): the sum of the
**    app containers and native sidecars, the init-container peak (with the
**    sidecars started before each init container), pod-level resources for
**    cpu/memory/hugepages-*, plus spec.overhead; plus `pods: 1`.
**  - The in-place resize rule per container (regular and sidecar; not
**    non-restartable init containers): no status resources => spec; a resize
**    pending or in progress => max(spec, actual, allocated); a resize
**    Infeasible (first PodResizePending condition with reason Infeasible) =>
**    max(actual, allocated) only.
**  - KAI GPU sharing from annotations: gpu-fraction, gpu-memory,
**    gpu-fraction-num-devices, with KAI's validation messages; whole GPUs
**    (nvidia.com/gpu, amd.com/gpu); MIG nvidia.com/mig-<G>g.<M>gb counted as G
**    GPUs each.
** GPU amounts are in hundredths of a device (KAI's 0.01 steps); a
** gpu-fraction's are KAI's float64 round(f x 100), and the fraction is also
** kept as the exact decimal it was written as.
*/
#ifndef TALLY_PODREQ_H
#define TALLY_PODREQ_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/arena.h"
#include "tally/objects.h"
#include "tally/resource.h"

typedef enum {
    TLY_GPU_NONE = 0,
    TLY_GPU_WHOLE,      /* nvidia.com/gpu or amd.com/gpu in the requests: gpu_devices devices */
    TLY_GPU_FRACTION,   /* gpu-fraction: gpu_portion hundredths on each of gpu_devices devices */
    TLY_GPU_MEMORY,     /* gpu-memory: gpu_memory_mib MiB on each of gpu_devices devices */
    TLY_GPU_MIG         /* MIG instances: mig_gpus whole GPUs charged */
} tly_gpu_kind;

typedef struct {
    /*
    ** Effective requests: every resource of the containers, overhead and
    ** pod-level resources, plus pods: 1. Whole GPUs appear under their
    ** resource name (nvidia.com/gpu); fractional and gpu-memory requests do
    ** not (they are in the gpu_* fields); MIG resources appear by name.
    */
    tly_rlist req;
    uint8_t gpu_kind;          /* a tly_gpu_kind */
    uint32_t gpu_resource;     /* TLY_R_NVIDIA_GPU or TLY_R_AMD_GPU */
    uint32_t gpu_devices;      /* whole count, or the number of shared devices (>= 1) */
    uint32_t gpu_portion;      /* TLY_GPU_FRACTION: hundredths per device charged, 0..100
                                  (float64 f x 100 rounded half away from zero, as KAI) */
    uint64_t gpu_frac_num;     /* TLY_GPU_FRACTION: the fraction exactly, gpu_frac_num / */
    uint32_t gpu_frac_scale;   /*   10^gpu_frac_scale (to 19 significant digits, rounded up) */
    uint64_t gpu_memory_mib;   /* TLY_GPU_MEMORY: MiB per device */
    uint32_t mig_gpus;         /* TLY_GPU_MIG: G x count summed over MIG resources */
    bool invalid;
    const char *reason;        /* when invalid: InvalidGPUSharingRequest, GPUSharingDisabled, InvalidResources */
    const char *message;       /* KAI's message for it */
} tly_podreq;

/*
** Computes p's effective request into *out (storage from arena a).
** gpu_sharing says whether KAI GPU sharing is enabled (Config). Never
** fails: an invalid pod is reported through out->invalid.
*/
void tly_podreq_compute(const tly_pod *p, bool gpu_sharing, tly_names *names, tly_arena *a,
                        tly_podreq *out);

/* The first PodResizePending condition has reason Infeasible. */
bool tly_pod_resize_infeasible(const tly_pod *p);

/*
** Hundredths of a GPU that the request charges on a node whose devices have
** node_gpu_mem_mib MiB each (0 when unknown): whole N => 100 N; fraction =>
** portion x devices; gpu-memory => ceil(100 x mem / node_mem) x devices
** (exact integers; 0 when node_gpu_mem_mib is 0); MIG => 100 x G.
*/
uint64_t tly_podreq_gpu_hundredths(const tly_podreq *r, uint64_t node_gpu_mem_mib);

#endif
