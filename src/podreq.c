/*
** podreq.c: a pod's effective request (podreq.h; contract section 2,
** "Effective requests").
**
** The computation runs in four steps, each a direct transcription of a
** source:
**
**  1. Per container (k8s-pod-requests.md selectors, KAI's resize branch in
**     kai-facts.md 4.2): the spec requests; for app containers and native
**     sidecars with a container status that carries resources or
**     allocatedResources, max(spec, actual, allocated) per resource, or
**     max(actual, allocated) alone when the resize is Infeasible.
**     Non-restartable init containers always keep their spec: they have run
**     to completion and cannot be resized.
**  2. Aggregation as component-helpers' agg() does it (KEP-753 sidecars):
**     sum(app) + sum(sidecars), against the init peak, which for each init
**     container is its request plus the sidecars declared before it (and
**     for each sidecar, the sidecars up to and including it). Then the
**     pod-level override (cpu, memory, hugepages-* replace the aggregate),
**     then spec.overhead is added, then `pods: 1`.
**     Unlike upstream, which takes a max of separately summed spec, actual
**     and allocated totals, the resize max is per container (step 1), as
**     the KAI resize design charges it.
**  3. KAI GPU-sharing validation, in the order KAI's admission runs it
**     (binder gpusharing plugin Validate, then ValidateGpuRequests): GPU
**     sharing disabled with a gpu-fraction/gpu-memory annotation; mps
**     without a shared request; fraction with whole GPUs; memory with
**     fraction or whole GPUs; num-devices without fraction or memory; then
**     the memory, fraction and num-devices values. The first failure is
**     the one reported, with KAI's text.
**  4. Classification of the GPU request: fraction, gpu-memory, whole
**     devices (nvidia.com/gpu or amd.com/gpu), MIG instances.
**
** An invalid pod is still computed in full: req is always the effective
** request, since a bound invalid pod still occupies its node. The gpu_*
** fields describe the GPU request only when it is well formed: a
** GPUSharingDisabled pod whose annotations are otherwise valid keeps its
** fraction or gpu-memory classification (it is a policy refusal, not a
** malformed request); any other invalid pod has gpu_kind NONE.
**
** No floating point: a gpu-fraction is parsed as an exact decimal with
** tly_qty_parse (nano-units) and rounded to hundredths in integers, and
** ceil(100 x mem / node_mem) is computed in 128-bit integers.
*/
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tally/error.h"
#include "tally/podreq.h"
#include "tally/quantity.h"

__extension__ typedef unsigned __int128 u128;

#define NANOS_PER_UNIT 1000000000
#define NANOS_PER_HUNDREDTH 10000000

static const char REASON_SHARING[] = "InvalidGPUSharingRequest";
static const char REASON_DISABLED[] = "GPUSharingDisabled";
static const char REASON_RESOURCES[] = "InvalidResources";

/* KAI's admission messages (binder gpu_request_validator.go), verbatim. */
static const char MSG_FRACTION[] =
    "gpu-fraction annotation value must be a positive number smaller than 1.0";
static const char MSG_MEMORY[] = "gpu-memory annotation value must be a positive integer greater than 0";
static const char MSG_COUNT[] = "fraction count annotation value must be a positive integer greater than 0";
static const char MSG_FRACTION_AND_WHOLE[] =
    "cannot have both GPU fraction request and whole GPU resource request/limit";
static const char MSG_MEMORY_AND_GPU[] = "cannot request both GPU and GPU memory";
static const char MSG_COUNT_ALONE[] =
    "cannot request multiple fractional devices without specifying fraction portion or gpu-memory";
static const char MSG_MPS[] = "MPS is only supported with GPU fraction request";

/* ---- resize ------------------------------------------------------------- */

bool tly_pod_resize_infeasible(const tly_pod *p)
{
    /* Upstream IsPodResizeInfeasible: only the first PodResizePending
       condition counts, and its status is not looked at. */
    const tly_condition *c = tly_conditions_find(&p->conditions, "PodResizePending");
    return c && c->reason && strcmp(c->reason, "Infeasible") == 0;
}

/*
** The status of the container called name. Upstream looks in
** containerStatuses first, then initContainerStatuses, for every container;
** names are unique across both lists in a valid pod, so the order only
** matters for malformed input, where it follows upstream.
*/
static const tly_container_status *find_status(const tly_pod *p, const char *name)
{
    const char *n = name ? name : "";
    for (uint32_t i = 0; i < p->nstatuses; i++)
        if (p->statuses[i].name && strcmp(p->statuses[i].name, n) == 0)
            return &p->statuses[i];
    for (uint32_t i = 0; i < p->ninit_statuses; i++)
        if (p->init_statuses[i].name && strcmp(p->init_statuses[i].name, n) == 0)
            return &p->init_statuses[i];
    return NULL;
}

/*
** One container's request (step 1). resizable: an app container or a native
** sidecar. The result may share storage with the pod (spec requests); the
** caller only reads it.
*/
static tly_rlist container_request(const tly_pod *p, const tly_container *c, bool resizable,
                                   bool infeasible, tly_arena *a)
{
    if (!resizable)
        return c->requests;
    const tly_container_status *st = find_status(p, c->name);
    if (!st || (!st->has_resources && !st->has_allocated))
        return c->requests;
    tly_rlist actual, out;
    /* Lists that are absent are empty, so max() simply skips them. */
    tly_rlist_max(&st->requests, &st->allocated, a, &actual);
    if (infeasible)
        return actual;  /* the kubelet cannot grant the spec: charge what runs */
    /* spec first: on a tie max() keeps the left operand's format. */
    tly_rlist_max(&c->requests, &actual, a, &out);
    return out;
}

/* ---- aggregation -------------------------------------------------------- */

/*
** A NULL name is an id of another store's table: resize admission decodes the
** reviewed pods in stores of their own and reads only cpu and memory, whose
** ids every table shares (resource.h); any other id is left unclassified.
*/
static bool is_pod_level_name(const char *name)
{
    return name && (strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
           strncmp(name, "hugepages-", 10) == 0);
}

/* *acc += r; false on overflow (acc unchanged). */
static bool add_into(tly_rlist *acc, const tly_rlist *r, tly_arena *a)
{
    tly_rlist sum;
    if (tly_rlist_add(acc, r, a, &sum) != TLY_OK)
        return false;
    *acc = sum;
    return true;
}

/* Steps 1 and 2; false when a sum overflows (the request is then partial). */
static bool effective_requests(const tly_pod *p, tly_names *names, tly_arena *a, tly_rlist *out)
{
    bool infeasible = tly_pod_resize_infeasible(p);
    bool ok = true;
    tly_rlist result = {NULL, 0}, sidecars = {NULL, 0}, init_peak = {NULL, 0};

    for (uint32_t i = 0; i < p->ncontainers; i++) {
        tly_rlist r = container_request(p, &p->containers[i], true, infeasible, a);
        ok &= add_into(&result, &r, a);
    }
    for (uint32_t i = 0; i < p->ninit; i++) {
        const tly_container *c = &p->init_containers[i];
        tly_rlist r = container_request(p, c, c->restart_always, infeasible, a);
        tly_rlist use;
        if (c->restart_always) {
            /* A sidecar keeps running: it adds to the steady state and to
               every init container that starts after it. */
            ok &= add_into(&result, &r, a);
            ok &= add_into(&sidecars, &r, a);
            use = sidecars;
        } else {
            use = r;
            ok &= add_into(&use, &sidecars, a);
        }
        tly_rlist_max(&init_peak, &use, a, &init_peak);
    }
    tly_rlist_max(&result, &init_peak, a, &result);

    /* Pod-level resources replace the aggregate for the names the kubelet
       supports at pod level; other names there (ephemeral-storage) are
       ignored and the containers' values stand. */
    if (p->has_pod_resources) {
        for (uint32_t i = 0; i < p->pod_requests.n; i++) {
            const tly_rq *e = &p->pod_requests.v[i];
            if (is_pod_level_name(tly_names_str(names, e->id)))
                tly_rlist_set(&result, a, e->id, e->q);
        }
    }

    ok &= add_into(&result, &p->overhead, a);

    tly_rq one = {TLY_R_PODS, tly_qty_from_int(1, TLY_QFMT_DECIMAL_SI)};
    tly_rlist pods = {&one, 1};
    ok &= add_into(&result, &pods, a);

    *out = result;
    return ok;
}

/* ---- GPU annotations ---------------------------------------------------- */

/*
** Go's strconv.ParseUint(s, 10, 64): decimal digits only, no sign, no
** spaces, no underscores, at most 2^64 - 1.
*/
static bool parse_uint64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    uint64_t v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9')
            return false;
        unsigned d = (unsigned)(*c - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/*
** A plain decimal number as strconv.ParseFloat reads one: optional sign,
** digits with an optional point (at least one digit), optional exponent.
** This keeps out the quantity suffixes tly_qty_parse would otherwise accept
** ("500m", "1Ki"), which are not numbers to KAI. ParseFloat's "inf", "NaN"
** and hexadecimal forms are refused as well: none is a usable fraction
** (KAI's own range check happens to let "NaN" through).
*/
static bool is_plain_decimal(const char *s)
{
    const char *c = s;
    int digits = 0;
    if (*c == '+' || *c == '-')
        c++;
    for (; *c >= '0' && *c <= '9'; c++)
        digits++;
    if (*c == '.')
        for (c++; *c >= '0' && *c <= '9'; c++)
            digits++;
    if (!digits)
        return false;
    if (*c == 'e' || *c == 'E') {
        c++;
        if (*c == '+' || *c == '-')
            c++;
        if (*c < '0' || *c > '9')
            return false;
        while (*c >= '0' && *c <= '9')
            c++;
    }
    return *c == '\0';
}

/*
** gpu-fraction: 0 < f < 1, and in hundredths round-half-away-from-zero of
** f x 100 (Go's math.Round in KAI's GPUs()), which must not be 0.
** Quantities keep 10^-9, so the value is exact for any text with up to nine
** decimals; finer digits round up to the next nano-unit first.
*/
static bool parse_fraction(const char *s, uint32_t *hundredths)
{
    tly_qty q;
    if (!is_plain_decimal(s) || tly_qty_parse_str(s, &q) != TLY_OK)
        return false;
    if (q.nanos <= 0 || q.nanos >= NANOS_PER_UNIT)
        return false;
    int64_t n = (int64_t)q.nanos;  /* 0 < n < 10^9 */
    int64_t h = (n + NANOS_PER_HUNDREDTH / 2) / NANOS_PER_HUNDREDTH;
    if (h == 0)
        return false;
    *hundredths = (uint32_t)h;  /* 1..100 */
    return true;
}

/* Whether any container or init container names resource id in its spec requests or limits. */
static bool spec_names(const tly_pod *p, uint32_t id)
{
    bool found = false;
    for (uint32_t i = 0; i < p->ncontainers && !found; i++) {
        tly_rlist_get(&p->containers[i].requests, id, &found);
        if (!found)
            tly_rlist_get(&p->containers[i].limits, id, &found);
    }
    for (uint32_t i = 0; i < p->ninit && !found; i++) {
        tly_rlist_get(&p->init_containers[i].requests, id, &found);
        if (!found)
            tly_rlist_get(&p->init_containers[i].limits, id, &found);
    }
    return found;
}

static void set_invalid(tly_podreq *out, const char *reason, const char *message)
{
    if (out->invalid)
        return;  /* the first failure is the one reported */
    out->invalid = true;
    out->reason = reason;
    out->message = message;
}

/* ---- MIG ---------------------------------------------------------------- */

/*
** ^nvidia.com/mig-(\d+)g\.(\d+)gb$: *g receives the first number (the
** GPU slices, i.e. the GPUs each instance is charged as). Numbers too large
** for 32 bits do not match: no MIG profile comes close.
*/
static bool mig_profile(const char *name, uint32_t *g)
{
    static const char prefix[] = "nvidia.com/mig-";
    if (!name || strncmp(name, prefix, sizeof prefix - 1) != 0)  /* NULL: see is_pod_level_name */
        return false;
    const char *c = name + sizeof prefix - 1;
    uint64_t v = 0;
    int nd = 0;
    for (; *c >= '0' && *c <= '9'; c++, nd++) {
        v = v * 10 + (uint64_t)(*c - '0');
        if (v > UINT32_MAX)
            return false;
    }
    if (!nd || strncmp(c, "g.", 2) != 0)
        return false;
    c += 2;
    nd = 0;
    for (; *c >= '0' && *c <= '9'; c++)
        nd++;
    if (!nd || strcmp(c, "gb") != 0)
        return false;
    *g = (uint32_t)v;
    return true;
}

/* ---- the request -------------------------------------------------------- */

/*
** A device count from a request: a whole, non-negative number that fits
** in 32 bits. The decoder reports non-integer extended resources too; here
** it decides whether the pod can be accounted at all.
*/
static bool device_count(tly_qty q, uint32_t *out)
{
    if (q.nanos < 0 || q.nanos % NANOS_PER_UNIT != 0 || q.nanos / NANOS_PER_UNIT > UINT32_MAX)
        return false;
    *out = (uint32_t)(q.nanos / NANOS_PER_UNIT);
    return true;
}

static const char *bad_count_message(tly_names *names, uint32_t id, tly_qty q, tly_arena *a)
{
    char buf[TLY_QTY_BUFSZ];
    tly_qty_format(q, buf, sizeof buf);
    const char *name = tly_names_str(names, id);
    return tly_arena_printf(a, "%s request %s must be a whole number of devices", name ? name : "?", buf);
}

void tly_podreq_compute(const tly_pod *p, bool gpu_sharing, tly_names *names, tly_arena *a,
                        tly_podreq *out)
{
    memset(out, 0, sizeof *out);
    out->gpu_resource = TLY_R_NVIDIA_GPU;

    if (!effective_requests(p, names, a, &out->req))
        set_invalid(out, REASON_RESOURCES, "the pod's resource requests overflow");

    /* Whole GPUs: what the effective request charges (> 0). */
    tly_qty nv = tly_rlist_get(&out->req, TLY_R_NVIDIA_GPU, NULL);
    tly_qty amd = tly_rlist_get(&out->req, TLY_R_AMD_GPU, NULL);
    if (tly_qty_sign(amd) > 0)
        out->gpu_resource = TLY_R_AMD_GPU;
    uint32_t whole = 0, n;
    /* The API server rejects a fractional device count before any
       admission webhook runs, so this is checked first. */
    if (tly_qty_sign(nv) > 0) {
        if (device_count(nv, &n))
            whole += n;
        else
            set_invalid(out, REASON_RESOURCES, bad_count_message(names, TLY_R_NVIDIA_GPU, nv, a));
    }
    if (tly_qty_sign(amd) > 0) {
        /* A pod naming both vendors is charged for both, under amd.com/gpu. */
        if (!device_count(amd, &n))
            set_invalid(out, REASON_RESOURCES, bad_count_message(names, TLY_R_AMD_GPU, amd, a));
        else if (whole > UINT32_MAX - n)
            set_invalid(out, REASON_RESOURCES, "GPU requests exceed 4294967295 devices");
        else
            whole += n;
    }

    /* MIG instances: G GPUs per instance of a <G>g.<M>gb profile. */
    uint64_t mig = 0;
    for (uint32_t i = 0; i < out->req.n; i++) {
        uint32_t g;
        const tly_rq *e = &out->req.v[i];
        if (!mig_profile(tly_names_str(names, e->id), &g) || tly_qty_sign(e->q) <= 0)
            continue;
        if (!device_count(e->q, &n)) {
            set_invalid(out, REASON_RESOURCES, bad_count_message(names, e->id, e->q, a));
            continue;
        }
        mig += (uint64_t)g * n;
        if (mig > UINT32_MAX) {
            set_invalid(out, REASON_RESOURCES, "MIG requests exceed 4294967295 GPUs");
            mig = 0;
            break;
        }
    }

    /* KAI's annotations. */
    const tly_kvs *ann = &p->meta.annotations;
    const char *frac_s = tly_kvs_get(ann, "gpu-fraction");
    const char *mem_s = tly_kvs_get(ann, "gpu-memory");
    const char *count_s = tly_kvs_get(ann, "gpu-fraction-num-devices");
    const char *mps_s = tly_kvs_get(ann, "mps");
    /* KAI looks for the resource key in any container's limits; with
       defaulting a request implies the limit, and an explicit 0 counts. */
    bool whole_named = spec_names(p, TLY_R_NVIDIA_GPU) || spec_names(p, TLY_R_AMD_GPU) || whole > 0;
    bool shared = frac_s || mem_s;

    const char *err = NULL;
    uint32_t portion = 0;
    uint64_t mem = 0, count = 1;
    if (!shared && mps_s && strcmp(mps_s, "true") == 0)
        err = MSG_MPS;
    else if (frac_s && whole_named)
        err = MSG_FRACTION_AND_WHOLE;
    else if (mem_s && (frac_s || whole_named))
        err = MSG_MEMORY_AND_GPU;
    else if (count_s && !shared)
        err = MSG_COUNT_ALONE;
    else if (mem_s && (!parse_uint64(mem_s, &mem) || mem == 0))
        err = MSG_MEMORY;
    else if (frac_s && !parse_fraction(frac_s, &portion))
        err = MSG_FRACTION;
    else if (count_s && (!parse_uint64(count_s, &count) || count == 0 || count > UINT32_MAX))
        err = MSG_COUNT;  /* more than 2^32 - 1 devices can never be placed */

    /* Sharing disabled is checked before the request itself (KAI's plugin
       does so), but a well-formed shared request is still classified. */
    if (shared && !gpu_sharing)
        set_invalid(out, REASON_DISABLED,
                    tly_arena_printf(a,
                                     "attempting to create a pod %s/%s with gpu sharing "
                                     "request, while GPU sharing is disabled",
                                     p->meta.ns ? p->meta.ns : "",
                                     p->meta.name ? p->meta.name : ""));
    if (err)
        set_invalid(out, REASON_SHARING, err);
    bool classify = !out->invalid || (out->reason == REASON_DISABLED && !err);
    if (!classify)
        return;

    if (frac_s) {
        out->gpu_kind = TLY_GPU_FRACTION;
        out->gpu_portion = portion;
        out->gpu_devices = (uint32_t)count;
    } else if (mem_s) {
        out->gpu_kind = TLY_GPU_MEMORY;
        out->gpu_memory_mib = mem;
        out->gpu_devices = (uint32_t)count;
    } else if (whole > 0) {
        out->gpu_kind = TLY_GPU_WHOLE;
        out->gpu_devices = whole;
    } else if (mig > 0) {
        out->gpu_kind = TLY_GPU_MIG;
        out->mig_gpus = (uint32_t)mig;
    }
}

uint64_t tly_podreq_gpu_hundredths(const tly_podreq *r, uint64_t node_gpu_mem_mib)
{
    u128 h = 0;
    switch (r->gpu_kind) {
    case TLY_GPU_WHOLE:
        h = (u128)100 * r->gpu_devices;
        break;
    case TLY_GPU_FRACTION:
        h = (u128)r->gpu_portion * r->gpu_devices;
        break;
    case TLY_GPU_MEMORY:
        if (node_gpu_mem_mib == 0)
            return 0;
        /* ceil(100 x mem / node_mem), in 128 bits so 100 x mem cannot wrap. */
        h = ((u128)100 * r->gpu_memory_mib + node_gpu_mem_mib - 1) / node_gpu_mem_mib;
        h *= r->gpu_devices;
        break;
    case TLY_GPU_MIG:
        h = (u128)100 * r->mig_gpus;
        break;
    default:
        return 0;
    }
    return h > UINT64_MAX ? UINT64_MAX : (uint64_t)h;
}
