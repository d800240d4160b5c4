/*
** dra.c: Dynamic Resource Allocation for the pod placement engine (dra.h).
**
** What Kubernetes does, and what tally keeps of it
** ------------------------------------------------
** A pod names ResourceClaims (directly, or through a template from which a
** private claim is made for it). kube-scheduler's DRA plugin allocates an
** unallocated claim on the candidate node: for each request it picks devices
** from the ResourceSlices published for that node, keeping only devices that
** every selector of the request's DeviceClass and of the request accepts, and
** that no other claim holds. An allocated claim fits only on the nodes that
** can reach its devices. tally reproduces that decision for its own pods so
** that the placement engine can tell "fits on node X with devices D" from
** "does not fit here", and the AccountedResource charges can be computed from
** the devices actually chosen, as the seed requires.
**
** Indexes (built once by tly_dra_create):
**   - pools (driver, pool name): only the slices of the newest generation
**     count; a pool is offered only when complete (resourceSliceCount
**     slices) and valid (the slices agree on the count, no device twice);
**   - every device of those slices gets an index; a device is identified by
**     (driver, pool, device) exactly as allocation results name it;
**   - per node, the device indices reachable from it (slices with that
**     nodeName, allNodes slices, and devices of perDeviceNodeSelection
**     slices by their own node selection), in (slice name, device name)
**     order: the order in which devices are tried, a declared tie break;
**     devices of node-selector slices are matched per try;
**   - shared counters per (driver, pool, set, counter), with what the used
**     devices consume already taken off;
**   - DeviceClasses by name, claims and templates by (namespace, name), each
**     with its selectors and constraints compiled once;
**   - `used` counts per device: the allocation results of the input's claims
**     (adminAccess results excepted), then the devices committed in this run.
**
** The search (allocate_all) is the Kubernetes allocator's depth-first
** search: claims, requests, firstAvailable alternatives and device slots in
** order, with backtracking, so whether a pod fits does not depend on names.
** A device is usable when not held (adminAccess: not twice in its claim),
** its counters are available and the claim's matchAttribute constraints
** still hold. One ExactCount request's devices are tried as combinations,
** claims hold at most 32 devices, and the search on one node stops after
** SEARCH_STEPS device trials (TLY_DRA_BOUND: that node is refused, as
** Kubernetes' filter timeout refuses it; a pod that then fits nowhere is
** UnsupportedConstraint, not evaluated).
**
** Selectors
** ---------
** Selectors are CEL programs over `device`, evaluated by tally's one CEL
** module (cel.h) in its device environment: each selector of a class, claim
** or template is compiled once when the indexes are built, and evaluated
** without parsing or allocating. The lists of classes and templates, which
** every pod using them tries on the same devices, remember their answer per
** device (dra_sels.memo, 2 bits a device); a claim's own lists are evaluated
** per device per candidate node. The environment
** holds what placement evaluates exactly, without floating point:
**   device.driver == "x"   (and !=, and string ordering)
**   device.attributes["domain"].name  OP  "str" | int | true | false
**   device.attributes["domain"]["name"] (the same), a bare bool attribute
**   device.capacity["domain"].name.compareTo(quantity("40Gi")) OP 0
**   .isGreaterThan(quantity(..)) / .isLessThan(quantity(..))
**   version attributes: .compareTo(semver("1.2.3")), isGreaterThan,
**   isLessThan, major(), minor(), patch(); == by semantic-version equality
**   "name" in device.attributes["domain"] (and in device.capacity[...])
**   has(device.attributes["domain"].name), && || ! and parentheses.
** Anything else is refused when compiled: the pod is reported as
** UnsupportedConstraint with the expression quoted, never silently matched.
** Attribute lookup follows Kubernetes: device.attributes["gpu.nvidia.com"].x
** is the attribute `gpu.nvidia.com/x`, or the plain `x` of a device whose
** driver is gpu.nvidia.com. Evaluation follows CEL's error rules (an error
** absorbed by `false &&` or `true ||`); a missing attribute or a type
** mismatch in an ordering is an error, and an error at the top means "no
** match". (Kubernetes reports such a runtime error for the whole node; the
** result, no allocation with that device, is the same in the common case.)
** Equality across types is false (CEL's heterogeneous equality).
**
** Shared claims and charging once
** -------------------------------
** A claim referenced by name may be used by several pods. The seed wants it
** used by one queue only, and its devices charged once to that queue. Each
** named claim keeps a small list of (queue, users, charged) counts: users
** come from reservedFor (pods of the input whose queue tally knows), the
** claim's queue label, and commits; charged from commits whose choice
** charged it. Counts rather than flags, so that tly_dra_undo() can take back
** exactly what tly_dra_commit() added.
*/
#include "tally/dra.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "tally/accounted.h"
#include "tally/arena.h"
#include "tally/cel.h"
#include "tally/error.h"
#include "tally/nodefit.h"

#define NONE UINT32_MAX

/*
** A name written either way (AccountedResource match names, capacityName):
** equal as written, or equal once a plain name is qualified by the driver.
*/
static bool name_matches(const char *have, const char *want, const char *driver)
{
    if (strcmp(have, want) == 0)
        return true;
    const char *hs = strchr(have, '/'), *ws_ = strchr(want, '/');
    if (hs && !ws_)
        return driver && tly_cel_device_name_is(have, driver, driver, want);
    if (!hs && ws_) {
        size_t dl = (size_t)(ws_ - want);
        return driver && strlen(driver) == dl && memcmp(driver, want, dl) == 0 &&
               strcmp(have, ws_ + 1) == 0;
    }
    return false;
}

/* Whether selector sel (compiled in the device environment) matches dev of driver. */
static bool cel_match(const tly_cel_prog *sel, const char *driver, const tly_device *dev)
{
    return tly_cel_eval_device(sel, driver, dev) == TLY_CEL_TRUE;
}

/*
** Compiles a selector once, for every device and node it is tried on. On
** failure returns NULL and *err (in a) is "unsupported CEL selector
** '<expr>': <detail> (column N)".
*/
static tly_cel_prog *cel_compile(tly_arena *a, const char *expr, const char **err)
{
    const char *why;
    tly_cel_prog *p = tly_cel_compile(a, expr, TLY_CEL_ENV_DEVICE, &why);
    *err = p ? NULL : tly_arena_printf(a, "unsupported CEL selector '%s': %s", expr, why);
    return p;
}

/* ====================================================================== */
/* Indexes                                                                */
/* ====================================================================== */

/*
** A list of compiled selectors; err is the first one tally cannot compile.
** For a firstAvailable request, alts holds each subrequest's list (in
** order) and err the first problem in any of them.
*/
typedef struct dra_sels dra_sels;
struct dra_sels {
    tly_cel_prog **sel;
    uint32_t nsel;
    const char *err;
    dra_sels *alts;
    uint32_t nalts;
    const char *rname;             /* an alternative's result name, "request/subrequest" */
    /*
    ** Per device, 2 bits: whether the whole list was evaluated on it and
    ** whether it matched. A list's answer on a device depends on nothing
    ** else, and the lists of classes and templates are tried on the same
    ** devices by every pod that uses them, on every node searched. NULL for
    ** a claim's own lists (one pod's: nothing to share) and empty lists.
    */
    uint8_t *memo;
};

typedef struct {
    const tly_device_class *cls;
    dra_sels sels;
} dra_class;

/* A matchAttribute constraint, compiled: the requests it names and the split name. */
typedef struct {
    const tly_device_constraint *c;
    const char *domain, *name;
} dra_constraint;

typedef struct {
    const tly_claim_spec *spec;
    dra_sels *reqs;                /* one per request */
    dra_constraint *cons;          /* one per constraint */
    const char *err;               /* a constraint tally does not evaluate, or NULL */
    const char *invalid;           /* the object did not decode: the pod is Invalid */
} dra_spec;

typedef struct {
    const char *queue;
    uint32_t users, charged;
} dra_qref;


typedef struct {
    const tly_resource_claim *claim;
    dra_spec spec;
    bool run_alloc;                /* allocated by a commit of this run */
    const char *run_node;
    tly_dra_dev *run_devs;         /* malloc'd */
    uint32_t nrun_devs;
    dra_qref *q;                   /* malloc'd */
    uint32_t nq, capq;
} dra_claim;

/*
** A resource pool (driver, pool name): the slices of its newest generation.
** Devices of an invalid pool (slices disagree on the count, a device listed
** twice) are not offered, nor those of an incomplete pool (fewer slices than
** resourceSliceCount) to an All request (pool_ok); allocation results may
** still name them.
*/
typedef struct {
    const char *driver, *name;
    int64_t gen, count;
    uint32_t nslices;
    bool disagree;                 /* slices of the generation differ in resourceSliceCount */
    const char *dup;               /* a device name listed twice, or NULL */
} dra_pool;

/* A shared counter of a pool's counter set: its value less what used devices consume. */
typedef struct {
    const char *set, *name;
    tly_qty avail;
    tly_qty pending;               /* consumed by the devices picked in try `epoch` */
    uint32_t epoch;
} dra_counter;

/* One counter a device consumes. */
typedef struct {
    uint32_t counter;
    tly_qty amount;
} dra_use;

typedef struct {
    const tly_resource_slice *slice;
    const tly_device *dev;
    uint32_t pool;
    uint32_t used;                 /* claims holding it (admin access not counted) */
    uint32_t pick;                 /* epoch of the try that picked it ... */
    uint32_t npick;                /* ... and how many times in that try */
    uint32_t ufirst, nuse;         /* its counters: d->uses[ufirst .. ufirst + nuse) */
    const char *bad;               /* why it is never offered (unknown counter), or NULL */
    /* where it is reachable: the slice's node selection, or the device's own */
    const char *node_name;
    bool all_nodes, has_terms;
    const tly_selector *terms;
    uint32_t nterms;
} dra_devent;

typedef struct {
    const char *name;
    uint32_t *devs;
    uint32_t n, cap;
} dra_nodeent;

struct tly_dra {
    tly_store *s;
    tly_arena *a;
    dra_devent *devs;
    uint32_t ndevs;
    dra_pool *pools;
    uint32_t npools;
    tly_strmap poolmap;            /* driver\x1fpool -> index + 1 */
    dra_counter *counters;
    uint32_t ncounters;
    tly_strmap countermap;         /* driver\x1fpool\x1fset/counter -> index + 1 */
    dra_use *uses;
    uint32_t nuses;
    uint64_t steps_max;            /* the most device trials one tly_dra_try() made (bench) */
    uint64_t steps_total;          /* device trials of every tly_dra_try() (bench) */
    uint64_t tries;                /* tly_dra_try() searches run (bench) */
    uint64_t budget, budget_set;   /* device trials left for the pod (tly_dra_set_budget) */
    tly_strmap devkey;             /* driver\x1fpool\x1fdevice -> index + 1 */
    dra_nodeent *nodes;
    uint32_t nnodes;
    tly_strmap nodemap;            /* node name -> index + 1 */
    uint32_t *alldevs;             /* allNodes devices, for nodes without slices */
    uint32_t *seldevs;             /* devices of slices with a nodeSelector */
    uint32_t nsel;
    uint32_t nall;
    dra_class *classes;
    uint32_t nclasses;
    tly_strmap classmap;           /* name -> index + 1 */
    dra_claim *claims;
    uint32_t nclaims;
    tly_strmap claimmap;           /* ns\x1fname -> index + 1 */
    dra_spec *tmpls;
    uint32_t ntmpls;
    tly_strmap tmplmap;            /* ns\x1fname -> index + 1 */
    tly_strmap genmap;             /* ns\x1fpod\x1fpodClaim -> claim index + 1 */
    tly_strmap tnames;             /* ns\x1fpod\x1fpodClaim -> template claim name */
    uint32_t epoch;
};

/* "a\x1fb[\x1fc]" into buf; 0 when it does not fit (no such key can exist then). */
static size_t key3(char *buf, size_t cap, const char *x, const char *y, const char *z)
{
    int n = z ? snprintf(buf, cap, "%s\x1f%s\x1f%s", x ? x : "", y ? y : "", z)
              : snprintf(buf, cap, "%s\x1f%s", x ? x : "", y ? y : "");
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

static uint32_t map_get(const tly_strmap *m, const char *x, const char *y, const char *z)
{
    char buf[1024];
    size_t n = key3(buf, sizeof buf, x, y, z);
    return n ? (uint32_t)(uintptr_t)tly_strmap_get(m, buf, n) : 0;
}

static void map_put(tly_dra *d, tly_strmap *m, const char *x, const char *y, const char *z,
                    uint32_t idx1)
{
    char buf[1024];
    size_t n = key3(buf, sizeof buf, x, y, z);
    if (!n)
        return;
    const char *k = tly_arena_strndup(d->a, buf, n);
    tly_strmap_put(m, k, n, (void *)(uintptr_t)idx1);
}

/* Compiles a selector list; err becomes "<what>: <first compile error>". */
static void compile_sels(tly_dra *d, const char *const *exprs, uint32_t n, const char *what,
                         bool memo, dra_sels *out)
{
    out->sel = n ? tly_arena_zalloc(d->a, n * sizeof *out->sel) : NULL;
    out->nsel = n;
    if (memo && n)
        out->memo = tly_arena_zalloc(d->a, ((size_t)d->ndevs * 2 + 7) / 8 + 1);
    for (uint32_t i = 0; i < n; i++) {
        const char *err;
        out->sel[i] = cel_compile(d->a, exprs[i], &err);
        if (!out->sel[i] && !out->err)
            out->err = tly_arena_printf(d->a, "%s: %s", what, err);
    }
}

/*
** The claim's constraints: matchAttribute split into domain and name once;
** any other kind makes the claim unsupported (out->err quotes it).
*/
static void compile_constraints(tly_dra *d, const tly_meta *m, const tly_claim_spec *spec,
                                dra_spec *out)
{
    if (!spec->nconstraints)
        return;
    out->cons = tly_arena_zalloc(d->a, spec->nconstraints * sizeof *out->cons);
    for (uint32_t i = 0; i < spec->nconstraints; i++) {
        const tly_device_constraint *c = &spec->constraints[i];
        out->cons[i].c = c;
        if (c->unsupported || !c->match_attribute) {
            if (!out->err)
                out->err = tly_arena_printf(d->a, "%s %s/%s constraint %u uses %s, which tally "
                                            "does not evaluate", tly_kind_name(m->kind),
                                            m->ns ? m->ns : "", m->name, i,
                                            c->unsupported ? c->unsupported : "no matchAttribute");
            continue;
        }
        const char *slash = strchr(c->match_attribute, '/');
        out->cons[i].domain = tly_arena_strndup(d->a, c->match_attribute,
                                                (size_t)(slash - c->match_attribute));
        out->cons[i].name = slash + 1;
    }
}

/*
** Compiles every request of a claim or template spec. The messages are
** composed here, once, so that tly_dra_try() returns them without copying
** (an unsupported selector can be long).
*/
static void compile_spec(tly_dra *d, const tly_meta *m, const tly_claim_spec *spec, bool memo,
                         dra_spec *out)
{
    out->spec = spec;
    if (m->errors)
        out->invalid = tly_arena_printf(d->a, "%s %s/%s is invalid (%u decode error%s; tally "
                                        "validate lists them)", tly_kind_name(m->kind),
                                        m->ns ? m->ns : "", m->name, m->errors,
                                        m->errors == 1 ? "" : "s");
    compile_constraints(d, m, spec, out);
    out->reqs = spec->nrequests ? tly_arena_zalloc(d->a, spec->nrequests * sizeof *out->reqs)
                                : NULL;
    for (uint32_t r = 0; r < spec->nrequests; r++) {
        const tly_device_request *rq = &spec->requests[r];
        const char *what = tly_arena_printf(d->a, "%s %s/%s request %s", tly_kind_name(m->kind),
                                            m->ns ? m->ns : "", m->name, rq->name ? rq->name : "?");
        if (!rq->first_available) {
            compile_sels(d, rq->selectors, rq->nselectors, what, memo, &out->reqs[r]);
            continue;
        }
        dra_sels *ds = &out->reqs[r];
        if (rq->nsubs == 0) {
            ds->err = tly_arena_printf(d->a, "%s has no usable firstAvailable subrequest", what);
            continue;
        }
        ds->alts = tly_arena_zalloc(d->a, rq->nsubs * sizeof *ds->alts);
        ds->nalts = rq->nsubs;
        for (uint32_t k = 0; k < rq->nsubs; k++) {
            const char *swhat = tly_arena_printf(d->a, "%s/%s", what, rq->subs[k].name);
            compile_sels(d, rq->subs[k].selectors, rq->subs[k].nselectors, swhat, memo,
                         &ds->alts[k]);
            ds->alts[k].rname = tly_arena_printf(d->a, "%s/%s", rq->name, rq->subs[k].name);
            if (ds->alts[k].err && !ds->err)
                ds->err = ds->alts[k].err;
        }
    }
}

static void node_push(dra_nodeent *ne, uint32_t gi)
{
    if (ne->n == ne->cap) {
        ne->cap = ne->cap ? ne->cap * 2 : 16;
        ne->devs = tly_xrealloc(ne->devs, ne->cap * sizeof *ne->devs);
    }
    ne->devs[ne->n++] = gi;
}

static int cmp_dev_name(const void *a, const void *b)
{
    const tly_device *x = *(const tly_device *const *)a, *y = *(const tly_device *const *)b;
    return strcmp(x->name, y->name);
}

static dra_qref *qref(dra_claim *c, const char *queue, tly_dra *d)
{
    for (uint32_t i = 0; i < c->nq; i++)
        if (strcmp(c->q[i].queue, queue) == 0)
            return &c->q[i];
    if (!d)
        return NULL;
    if (c->nq == c->capq) {
        c->capq = c->capq ? c->capq * 2 : 2;
        c->q = tly_xrealloc(c->q, c->capq * sizeof *c->q);
    }
    c->q[c->nq] = (dra_qref){tly_arena_strdup(d->a, queue), 0, 0};
    return &c->q[c->nq++];
}

/* The pool of slice sl (created on first sight), as an index into d->pools. */
static uint32_t pool_of(tly_dra *d, const tly_resource_slice *sl)
{
    uint32_t v = map_get(&d->poolmap, sl->driver, sl->pool, NULL);
    if (v)
        return v - 1;
    d->pools = tly_xrealloc(d->pools, (d->npools + 1) * sizeof *d->pools);
    d->pools[d->npools] = (dra_pool){.driver = sl->driver, .name = sl->pool, .gen = INT64_MIN};
    map_put(d, &d->poolmap, sl->driver, sl->pool, NULL, d->npools + 1);
    return d->npools++;
}

/* Pass 1 over the slices: each pool's newest generation and whether its slices agree. */
static void gather_pools(tly_dra *d)
{
    uint32_t ns = tly_store_count(d->s, TLY_K_RESOURCE_SLICE);
    for (uint32_t i = 0; i < ns; i++) {
        const tly_resource_slice *sl = tly_store_at(d->s, TLY_K_RESOURCE_SLICE, i);
        if (!sl->driver || !sl->pool)
            continue;
        uint32_t pi = pool_of(d, sl);  /* may move d->pools */
        dra_pool *pl = &d->pools[pi];
        if (sl->generation > pl->gen) {
            /* A newer generation replaces every older slice. */
            pl->gen = sl->generation;
            pl->count = sl->slice_count;
            pl->nslices = 0;
            pl->disagree = false;
        }
        if (sl->generation == pl->gen) {
            pl->nslices++;
            pl->disagree |= sl->slice_count != pl->count;
        }
    }
}

/*
** Whether pool `pool` may be allocated from; else *why says why. An invalid
** pool never is. An incomplete one (a driver is updating it) is for an
** ExactCount request, as in Kubernetes' allocator ("does not matter as long
** the incomplete pool has some matching device"), but not for an All
** request (all = true), whose "all" is unknown until the pool is complete.
*/
static bool pool_ok(const tly_dra *d, uint32_t pool, bool all, const char **why)
{
    const dra_pool *pl = &d->pools[pool];
    if (pl->disagree || pl->dup) {
        *why = "invalid";
        return false;
    }
    if (all && (int64_t)pl->nslices != pl->count) {
        *why = "incomplete (being updated)";
        return false;
    }
    return true;
}

/* The counters of slice sl's sharedCounters, indexed by (driver, pool, set/counter). */
static void index_counters(tly_dra *d, const tly_resource_slice *sl)
{
    for (uint32_t k = 0; k < sl->ncounter_sets; k++) {
        const tly_counter_set *cs = &sl->counter_sets[k];
        for (uint32_t j = 0; j < cs->ncounters; j++) {
            char z[512];
            snprintf(z, sizeof z, "%s/%s", cs->name, cs->counters[j].name);
            if (map_get(&d->countermap, sl->driver, sl->pool, z))
                continue;  /* validation keeps names unique; the first stays */
            d->counters = tly_xrealloc(d->counters, (d->ncounters + 1) * sizeof *d->counters);
            d->counters[d->ncounters] = (dra_counter){cs->name, cs->counters[j].name,
                                                      cs->counters[j].value, {0, 0}, 0};
            map_put(d, &d->countermap, sl->driver, sl->pool, z, ++d->ncounters);
        }
    }
}

/* Resolves device gi's consumesCounters; an unknown counter keeps it from being offered. */
static void index_uses(tly_dra *d, uint32_t gi)
{
    dra_devent *de = &d->devs[gi];
    de->ufirst = d->nuses;
    for (uint32_t k = 0; k < de->dev->nconsumes; k++) {
        const tly_counter_set *cs = &de->dev->consumes[k];
        for (uint32_t j = 0; j < cs->ncounters; j++) {
            char z[512];
            snprintf(z, sizeof z, "%s/%s", cs->name, cs->counters[j].name);
            uint32_t ci = map_get(&d->countermap, de->slice->driver, de->slice->pool, z);
            if (!ci) {
                de->bad = tly_arena_printf(d->a, "it consumes counter %s of counter set %s, which "
                                           "pool %s/%s does not share", cs->counters[j].name,
                                           cs->name, de->slice->driver, de->slice->pool);
                continue;
            }
            d->uses = tly_xrealloc(d->uses, (d->nuses + 1) * sizeof *d->uses);
            d->uses[d->nuses++] = (dra_use){ci - 1, cs->counters[j].value};
        }
    }
    de->nuse = d->nuses - de->ufirst;
}

/* Where device dv of slice sl is reachable: the slice's selection or, per device, its own. */
static void set_reach(dra_devent *de, const tly_resource_slice *sl, const tly_device *dv)
{
    if (sl->per_device_node_selection) {
        de->node_name = dv->node_name;
        de->all_nodes = dv->all_nodes;
        de->has_terms = dv->has_node_selector;
        de->terms = dv->node_terms;
        de->nterms = dv->nnode_terms;
    } else {
        de->node_name = sl->node_name;
        de->all_nodes = sl->all_nodes;
        de->has_terms = sl->has_node_selector;
        de->terms = sl->node_terms;
        de->nterms = sl->nnode_terms;
    }
}

/* The node entry of `name`, created when new. */
static dra_nodeent *node_entry(tly_dra *d, const char *name)
{
    uintptr_t v = (uintptr_t)tly_strmap_get(&d->nodemap, name, strlen(name));
    if (v)
        return &d->nodes[v - 1];
    d->nodes = tly_xrealloc(d->nodes, (d->nnodes + 1) * sizeof *d->nodes);
    d->nodes[d->nnodes] = (dra_nodeent){.name = name};
    d->nnodes++;
    tly_strmap_put(&d->nodemap, name, strlen(name), (void *)(uintptr_t)d->nnodes);
    return &d->nodes[d->nnodes - 1];
}

/* Every node that some slice or device names gets an entry before devices are listed. */
static uint32_t make_nodes(tly_dra *d)
{
    uint32_t ns = tly_store_count(d->s, TLY_K_RESOURCE_SLICE), total = 0;
    for (uint32_t i = 0; i < ns; i++) {
        const tly_resource_slice *sl = tly_store_at(d->s, TLY_K_RESOURCE_SLICE, i);
        total += sl->ndevices;
        if (sl->node_name)
            node_entry(d, sl->node_name);
        for (uint32_t k = 0; sl->per_device_node_selection && k < sl->ndevices; k++)
            if (sl->devices[k].node_name)
                node_entry(d, sl->devices[k].node_name);
    }
    return total;
}

/* Lists device gi where it is reachable: its node, every node (allNodes), or the selector list. */
static void list_device(tly_dra *d, uint32_t gi)
{
    const dra_devent *de = &d->devs[gi];
    if (de->node_name) {
        node_push(node_entry(d, de->node_name), gi);
    } else if (de->all_nodes) {
        d->alldevs[d->nall++] = gi;
        for (uint32_t j = 0; j < d->nnodes; j++)
            node_push(&d->nodes[j], gi);
    } else if (de->has_terms) {
        d->seldevs[d->nsel++] = gi;
    }
}

/*
** Every device of the newest generation of each pool gets an index, in
** (slice name, device name) order; a device name listed twice in a pool
** makes the pool invalid (its first listing keeps the index, so that
** allocation results still find it).
*/
static void index_slices(tly_dra *d)
{
    gather_pools(d);
    uint32_t ns = tly_store_count(d->s, TLY_K_RESOURCE_SLICE), total = make_nodes(d);
    d->devs = tly_xcalloc(total ? total : 1, sizeof *d->devs);
    d->alldevs = tly_xcalloc(total ? total : 1, sizeof *d->alldevs);
    d->seldevs = tly_xcalloc(total ? total : 1, sizeof *d->seldevs);
    for (uint32_t i = 0; i < ns; i++) {
        const tly_resource_slice *sl = tly_store_at(d->s, TLY_K_RESOURCE_SLICE, i);
        if (sl->driver && sl->pool && sl->generation == d->pools[pool_of(d, sl)].gen)
            index_counters(d, sl);
    }
    const tly_device **sorted = tly_xcalloc(1, sizeof *sorted);
    for (uint32_t i = 0; i < ns; i++) {
        const tly_resource_slice *sl = tly_store_at(d->s, TLY_K_RESOURCE_SLICE, i);
        if (!sl->driver || !sl->pool || sl->ndevices == 0)
            continue;
        uint32_t pool = pool_of(d, sl);
        if (sl->generation != d->pools[pool].gen)
            continue;  /* out-dated: the driver has published a newer generation */
        sorted = tly_xrealloc(sorted, sl->ndevices * sizeof *sorted);
        for (uint32_t k = 0; k < sl->ndevices; k++)
            sorted[k] = &sl->devices[k];
        qsort(sorted, sl->ndevices, sizeof *sorted, cmp_dev_name);
        for (uint32_t k = 0; k < sl->ndevices; k++) {
            const tly_device *dv = sorted[k];
            if (!dv->name)
                continue;
            if (map_get(&d->devkey, sl->driver, sl->pool, dv->name)) {
                d->pools[pool].dup = dv->name;
                continue;
            }
            uint32_t gi = d->ndevs++;
            d->devs[gi] = (dra_devent){.slice = sl, .dev = dv, .pool = pool};
            set_reach(&d->devs[gi], sl, dv);
            index_uses(d, gi);
            map_put(d, &d->devkey, sl->driver, sl->pool, dv->name, gi + 1);
            list_device(d, gi);
        }
    }
    free(sorted);
}

/* A device becomes used (+1) or free (-1); its counters follow the first and last use. */
static void dev_use(tly_dra *d, uint32_t gi, int delta)
{
    dra_devent *de = &d->devs[gi];
    if (delta < 0 && de->used == 0)
        return;
    bool edge = delta > 0 ? de->used == 0 : de->used == 1;
    de->used = (uint32_t)((int64_t)de->used + delta);
    for (uint32_t k = 0; edge && k < de->nuse; k++) {
        const dra_use *u = &d->uses[de->ufirst + k];
        tly_qty *av = &d->counters[u->counter].avail, r;
        if ((delta > 0 ? tly_qty_sub(*av, u->amount, &r) : tly_qty_add(*av, u->amount, &r)) == TLY_OK)
            *av = r;
    }
}

/* The device index of an allocation result, or NONE. */
static uint32_t result_dev(const tly_dra *d, const char *driver, const char *pool,
                           const char *device)
{
    uint32_t v = map_get(&d->devkey, driver, pool, device);
    return v ? v - 1 : NONE;
}

static const char *const POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name";

static void index_claims(tly_dra *d)
{
    d->nclaims = tly_store_count(d->s, TLY_K_RESOURCE_CLAIM);
    d->claims = tly_xcalloc(d->nclaims ? d->nclaims : 1, sizeof *d->claims);
    const char *label_key = tly_store_queue_label_key(d->s);
    for (uint32_t i = 0; i < d->nclaims; i++) {
        const tly_resource_claim *c = tly_store_at(d->s, TLY_K_RESOURCE_CLAIM, i);
        dra_claim *st = &d->claims[i];
        st->claim = c;
        compile_spec(d, &c->meta, &c->spec, false, &st->spec);
        map_put(d, &d->claimmap, c->meta.ns, c->meta.name, NULL, i + 1);
        if (c->allocated)
            for (uint32_t r = 0; r < c->nresults; r++) {
                uint32_t gi = result_dev(d, c->results[r].driver, c->results[r].pool,
                                         c->results[r].device);
                if (gi != NONE && !c->results[r].admin_access)
                    dev_use(d, gi, +1);
            }
        /* Users known from the input: the queue label (KAI's shared-claim rule) and reservedFor. */
        const char *lq = tly_kvs_get(&c->meta.labels, label_key);
        if (lq && *lq)
            qref(st, lq, d)->users++;
        const char *pcn = tly_kvs_get(&c->meta.annotations, POD_CLAIM_NAME);
        for (uint32_t r = 0; r < c->nreserved_for; r++) {
            const tly_consumer_ref *cr = &c->reserved_for[r];
            if (!cr->resource || strcmp(cr->resource, "pods") != 0)
                continue;
            if (pcn)
                map_put(d, &d->genmap, c->meta.ns, cr->name, pcn, i + 1);
            const tly_pod *p = tly_store_find(d->s, TLY_K_POD, c->meta.ns, cr->name);
            if (p && tly_store_is_tally_pod(d->s, p))
                qref(st, tly_store_pod_queue(d->s, p, NULL), d)->users++;
        }
    }
    d->ntmpls = tly_store_count(d->s, TLY_K_RESOURCE_CLAIM_TEMPLATE);
    d->tmpls = tly_xcalloc(d->ntmpls ? d->ntmpls : 1, sizeof *d->tmpls);
    for (uint32_t i = 0; i < d->ntmpls; i++) {
        const tly_claim_template *t = tly_store_at(d->s, TLY_K_RESOURCE_CLAIM_TEMPLATE, i);
        compile_spec(d, &t->meta, &t->spec, true, &d->tmpls[i]);
        map_put(d, &d->tmplmap, t->meta.ns, t->meta.name, NULL, i + 1);
    }
}

tly_dra *tly_dra_create(tly_store *s)
{
    tly_dra *d = tly_xcalloc(1, sizeof *d);
    d->s = s;
    d->a = tly_arena_create(1 << 16);
    d->budget = d->budget_set = UINT64_MAX;
    tly_strmap_init(&d->devkey);
    tly_strmap_init(&d->nodemap);
    tly_strmap_init(&d->classmap);
    tly_strmap_init(&d->claimmap);
    tly_strmap_init(&d->tmplmap);
    tly_strmap_init(&d->genmap);
    tly_strmap_init(&d->tnames);
    tly_strmap_init(&d->poolmap);
    tly_strmap_init(&d->countermap);
    index_slices(d);

    d->nclasses = tly_store_count(s, TLY_K_DEVICE_CLASS);
    d->classes = tly_xcalloc(d->nclasses ? d->nclasses : 1, sizeof *d->classes);
    for (uint32_t i = 0; i < d->nclasses; i++) {
        const tly_device_class *dc = tly_store_at(s, TLY_K_DEVICE_CLASS, i);
        d->classes[i].cls = dc;
        compile_sels(d, dc->selectors, dc->nselectors,
                     tly_arena_printf(d->a, "DeviceClass %s", dc->meta.name), true,
                     &d->classes[i].sels);
        tly_strmap_put(&d->classmap, dc->meta.name, strlen(dc->meta.name),
                       (void *)(uintptr_t)(i + 1));
    }
    index_claims(d);
    return d;
}

void tly_dra_destroy(tly_dra *d)
{
    if (!d)
        return;
    for (uint32_t i = 0; i < d->nnodes; i++)
        free(d->nodes[i].devs);
    free(d->nodes);
    for (uint32_t i = 0; i < d->nclaims; i++) {
        free(d->claims[i].run_devs);
        free(d->claims[i].q);
    }
    free(d->claims);
    free(d->tmpls);
    free(d->classes);
    free(d->devs);
    free(d->alldevs);
    free(d->seldevs);
    tly_strmap_free(&d->devkey);
    tly_strmap_free(&d->nodemap);
    tly_strmap_free(&d->classmap);
    tly_strmap_free(&d->claimmap);
    tly_strmap_free(&d->tmplmap);
    tly_strmap_free(&d->genmap);
    tly_strmap_free(&d->tnames);
    tly_strmap_free(&d->poolmap);
    tly_strmap_free(&d->countermap);
    free(d->pools);
    free(d->counters);
    free(d->uses);
    tly_arena_destroy(d->a);
    free(d);
}

/* ====================================================================== */
/* Choices                                                                */
/* ====================================================================== */

void tly_dra_choice_init(tly_dra_choice *c) { memset(c, 0, sizeof *c); }

void tly_dra_choice_free(tly_dra_choice *c)
{
    free(c->claims);
    free(c->devs);
    memset(c, 0, sizeof *c);
}

void tly_dra_choice_copy(tly_dra_choice *dst, const tly_dra_choice *src)
{
    if (dst == src)
        return;
    tly_dra_claim_choice *claims = dst->claims;
    tly_dra_dev *devs = dst->devs;
    uint32_t cc = dst->cap_claims, cd = dst->cap_devs;
    if (cc < src->nclaims) {
        cc = src->nclaims;
        claims = tly_xrealloc(claims, cc * sizeof *claims);
    }
    if (cd < src->ndevs) {
        cd = src->ndevs;
        devs = tly_xrealloc(devs, cd * sizeof *devs);
    }
    *dst = *src;
    dst->claims = claims;
    dst->devs = devs;
    dst->cap_claims = cc;
    dst->cap_devs = cd;
    if (src->nclaims)
        memcpy(claims, src->claims, src->nclaims * sizeof *claims);
    if (src->ndevs)
        memcpy(devs, src->devs, src->ndevs * sizeof *devs);
}

static tly_dra_claim_choice *add_claim(tly_dra_choice *c)
{
    if (c->nclaims == c->cap_claims) {
        c->cap_claims = c->cap_claims ? c->cap_claims * 2 : 4;
        c->claims = tly_xrealloc(c->claims, c->cap_claims * sizeof *c->claims);
    }
    tly_dra_claim_choice *e = &c->claims[c->nclaims++];
    memset(e, 0, sizeof *e);
    e->state = NONE;
    e->first = c->ndevs;
    return e;
}

static void add_dev(tly_dra_choice *c, tly_dra_claim_choice *e, const tly_dra_dev *dv)
{
    if (c->ndevs == c->cap_devs) {
        c->cap_devs = c->cap_devs ? c->cap_devs * 2 : 8;
        c->devs = tly_xrealloc(c->devs, c->cap_devs * sizeof *c->devs);
    }
    c->devs[c->ndevs++] = *dv;
    e->ndevs++;
}

/* The deviceClassName of the request an allocation result names ("req" or "req/sub"). */
static const char *result_class(const tly_claim_spec *spec, const char *request)
{
    if (!request)
        return NULL;
    size_t len = strcspn(request, "/");
    for (uint32_t r = 0; r < spec->nrequests; r++) {
        const tly_device_request *rq = &spec->requests[r];
        if (!rq->name || strlen(rq->name) != len || memcmp(rq->name, request, len) != 0)
            continue;
        if (!rq->first_available || request[len] != '/')
            return rq->device_class;
        for (uint32_t k = 0; k < rq->nsubs; k++)  /* "req/sub": the subrequest's class */
            if (strcmp(rq->subs[k].name, request + len + 1) == 0)
                return rq->subs[k].device_class;
        return NULL;
    }
    return NULL;
}

static int whyf(tly_dra_choice *c, const char **why, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int whyf(tly_dra_choice *c, const char **why, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    if (why)
        *why = c->why;
    return rc;
}

/* Whether node selector terms (ORed) select `node`. */
static bool terms_select(const tly_dra *d, const tly_selector *terms, uint32_t nterms,
                         const char *node)
{
    const tly_k8s_node *n = node ? tly_store_find(d->s, TLY_K_NODE, NULL, node) : NULL;
    if (!n)
        return false;
    for (uint32_t i = 0; i < nterms; i++)
        if (tly_node_term_matches(&terms[i], n))
            return true;
    return false;
}

/*
** Whether device gi is reachable from `node`: by its slice's node selection
** or, in a perDeviceNodeSelection slice, by the device's own (set_reach).
*/
static bool dev_on_node(const tly_dra *d, uint32_t gi, const char *node)
{
    const dra_devent *de = &d->devs[gi];
    if (de->all_nodes)
        return true;
    if (de->node_name)
        return node && strcmp(de->node_name, node) == 0;
    if (de->has_terms)
        return terms_select(d, de->terms, de->nterms, node);
    return true;  /* a slice that names no node at all: no constraint */
}

static const dra_class *find_class(const tly_dra *d, const char *name)
{
    uintptr_t v = name ? (uintptr_t)tly_strmap_get(&d->classmap, name, strlen(name)) : 0;
    return v ? &d->classes[v - 1] : NULL;
}

static bool sels_eval(const dra_sels *s, const char *driver, const tly_device *dev)
{
    for (uint32_t i = 0; i < s->nsel; i++)
        if (!s->sel[i] || !cel_match(s->sel[i], driver, dev))
            return false;
    return true;
}

/* Whether every selector of s matches device gi (dev, of driver). */
static bool sels_match(const dra_sels *s, uint32_t gi, const char *driver, const tly_device *dev)
{
    if (!s->memo)
        return sels_eval(s, driver, dev);
    uint8_t *b = &s->memo[gi / 4];
    unsigned sh = (gi % 4) * 2;
    if (*b >> sh & 1)
        return *b >> sh & 2;
    bool ok = sels_eval(s, driver, dev);
    *b |= (uint8_t)((1u | (ok ? 2u : 0u)) << sh);
    return ok;
}

/*
** Node-independent checks of a claim that tally must allocate: -1 with *why
** when unsupported; a missing DeviceClass sets *missing and, for the first
** one, writes the reason into miss.
*/
static int check_spec(tly_dra *d, const tly_dra_claim_choice *e, const dra_spec *ds,
                      const char **why, bool *missing, char *miss, size_t cap)
{
    if (ds->err) {
        if (why)
            *why = ds->err;
        return -1;
    }
    for (uint32_t r = 0; r < ds->spec->nrequests; r++) {
        const tly_device_request *rq = &ds->spec->requests[r];
        if (ds->reqs[r].err) {
            if (why)
                *why = ds->reqs[r].err;
            return -1;
        }
        /* Every class a request (or any of its subrequests) names must exist. */
        uint32_t nalt = rq->first_available ? rq->nsubs : 1;
        for (uint32_t k = 0; k < nalt; k++) {
            const char *cname = rq->first_available ? rq->subs[k].device_class : rq->device_class;
            const dra_class *cl = find_class(d, cname);
            if (!cl) {
                if (!*missing)
                    snprintf(miss, cap, "DeviceClass %s of ResourceClaim %s/%s does not exist",
                             cname ? cname : "?", e->ns, e->name);
                *missing = true;
            } else if (cl->sels.err) {
                if (why)
                    *why = cl->sels.err;
                return -1;
            }
        }
    }
    return 1;
}

/* ---- the search ------------------------------------------------------ */

/* Kubernetes' AllocationResultsMaxSize: the devices one claim may hold. */
#define CLAIM_MAX_DEVICES 32
/* tally's bound on device trials per tly_dra_try() (Kubernetes bounds by a timeout). */
#define SEARCH_STEPS 200000

/*
** One request, or one subrequest of a firstAvailable request, on one node:
** the devices that its class and selectors accept, that are reachable and
** tolerated and whose pool may be allocated from (in the node's order).
*/
typedef struct {
    const tly_device_request *rq;
    const char *name;              /* the result name: "req" or "req/sub" */
    const char *base, *sub;        /* for constraints: the request, and the subrequest or NULL */
    uint32_t *cand;
    uint32_t ncand, nfree;         /* nfree: candidates no claim holds */
    uint32_t need;                 /* ExactCount: count; All: ncand */
    bool all, admin;
} dra_unit;

/* A request of a claim: units[first .. first + n), alternatives when firstAvailable. */
typedef struct {
    uint32_t first, n;
    bool fa;
} dra_req;

/* A matchAttribute constraint's state in the search: the value the first device set. */
typedef struct {
    const tly_attr *val;
    uint32_t n;
} dra_cstate;

typedef struct {
    tly_dra_claim_choice *e;
    const dra_spec *ds;
    uint32_t rfirst, nreq;
    dra_cstate *cs;                /* one per constraint */
} dra_sclaim;

typedef struct {
    tly_dra *d;
    tly_dra_choice *c;
    const char *node;
    const uint32_t *list;          /* the devices reachable from the node */
    uint32_t nlist;
    dra_sclaim *claims;
    uint32_t nclaims;
    dra_req *reqs;
    uint32_t nreqs;
    dra_unit *units;
    uint32_t nunits;
    uint64_t steps;
    uint64_t limit;                /* trials allowed: SEARCH_STEPS, or less of the pod's budget */
    const char *stop;              /* why the search stopped early (fatal for this node) */
    int stop_rc;                   /* 0 the node fails, -1 unsupported */
    bool limit_hit, counters_hit, constraint_hit;
    uint32_t counter, counter_dev;  /* the first counter that refused a device, and that device */
} dra_search;

static bool taints_tolerated(const tly_device *dev, const tly_device_request *rq)
{
    for (uint32_t i = 0; i < dev->ntaints; i++) {
        const tly_taint *t = &dev->taints[i];
        /* Only NoSchedule and NoExecute keep a device from being allocated (None does not). */
        if (!t->effect || (strcmp(t->effect, "NoSchedule") && strcmp(t->effect, "NoExecute")))
            continue;
        if (!tly_tolerates(rq->tolerations, rq->ntolerations, t))
            return false;
    }
    return true;
}

/* What keeps a device from a unit for good: nothing, the selectors, a taint, its pool. */
enum { SEL_OK, SEL_NO, SEL_TAINTED, SEL_POOL };

/*
** Whether device gi is one that unit u (an All request when all) may ever
** take on this node (state aside). A device of a bad pool or with a taint
** the request does not tolerate is SEL_POOL or SEL_TAINTED only when the
** selectors match it, so the message can say why matching devices were not
** offered.
*/
static int selectable(const tly_dra *d, const dra_class *cl, const dra_sels *sels,
                      const tly_device_request *rq, bool all, uint32_t gi)
{
    const dra_devent *de = &d->devs[gi];
    const char *why;
    int bar = de->bad || !pool_ok(d, de->pool, all, &why) ? SEL_POOL
              : !taints_tolerated(de->dev, rq)      ? SEL_TAINTED
                                                     : SEL_OK;
    bool match = sels_match(&cl->sels, gi, de->slice->driver, de->dev) &&
                 sels_match(sels, gi, de->slice->driver, de->dev);
    return match ? bar : SEL_NO;
}

/*
** For an All request: Kubernetes refuses it when any pool reachable from
** the node is incomplete or invalid, since "all" is not known then.
*/
static bool all_pools_problem(dra_search *sc, const tly_dra_claim_choice *e, const char *name,
                              const char **why)
{
    for (uint32_t k = 0; k < sc->nlist; k++) {
        const dra_devent *de = &sc->d->devs[sc->list[k]];
        const char *w;
        if (!pool_ok(sc->d, de->pool, true, &w))
            return whyf(sc->c, why, 1, "ResourceClaim %s/%s request %s asks for all devices, "
                        "but resource pool %s/%s is %s", e->ns, e->name, name,
                        de->slice->driver, de->slice->pool, w);
    }
    return false;
}

/* Fills unit u for request (or subrequest) rq named `name`; 0 with *why when it cannot work. */
static int make_unit(dra_search *sc, const tly_dra_claim_choice *e, dra_unit *u,
                     const tly_device_request *rq, const dra_sels *sels, const char *name,
                     const char *base, const char *sub, const char **why)
{
    tly_dra *d = sc->d;
    const dra_class *cl = find_class(d, rq->device_class);
    *u = (dra_unit){.rq = rq, .name = name, .base = base, .sub = sub};
    u->all = rq->allocation_mode && strcmp(rq->allocation_mode, "All") == 0;
    u->admin = rq->admin_access;
    u->cand = tly_xmalloc((sc->nlist ? sc->nlist : 1) * sizeof *u->cand);
    uint32_t tainted = 0, badpool = 0;
    for (uint32_t k = 0; cl && k < sc->nlist; k++) {
        uint32_t gi = sc->list[k];
        int sel = selectable(d, cl, sels, rq, u->all, gi);
        tainted += sel == SEL_TAINTED;
        badpool += sel == SEL_POOL;
        if (sel != SEL_OK)
            continue;
        u->cand[u->ncand++] = gi;
        u->nfree += d->devs[gi].used == 0 || u->admin;
    }
    /* Matching devices that were not offered, for the messages below. */
    char extra[160] = "";
    size_t w = 0;
    if (tainted)
        w += (size_t)snprintf(extra, sizeof extra, "; matching but not offered: %u with a taint "
                              "the request does not tolerate", tainted);
    if (badpool)
        snprintf(extra + w, sizeof extra - w, "%s %u in %s resource pools",
                 w ? "," : "; matching but not offered:", badpool,
                 u->all ? "incomplete or invalid" : "invalid");
    const char *cls = rq->device_class ? rq->device_class : "?", *node = sc->node ? sc->node : "?";
    if (u->all) {
        u->need = u->ncand;
        if (all_pools_problem(sc, e, name, why))
            return 0;
        if (u->ncand == 0)
            return whyf(sc->c, why, 0, "insufficient devices of class %s (ResourceClaim %s/%s "
                        "request %s wants all, none on node %s%s)", cls, e->ns, e->name, name,
                        node, extra);
        for (uint32_t k = 0; k < u->ncand && !u->admin; k++) {
            const dra_devent *de = &d->devs[u->cand[k]];
            if (de->used)
                return whyf(sc->c, why, 0, "ResourceClaim %s/%s request %s wants all devices of "
                            "class %s, but device %s/%s/%s is in use", e->ns, e->name, name, cls,
                            de->slice->driver, de->slice->pool, de->dev->name);
        }
        return 1;
    }
    u->need = rq->count > 0 && rq->count <= UINT32_MAX ? (uint32_t)rq->count : UINT32_MAX;
    if (u->nfree < u->need)
        return whyf(sc->c, why, 0, "insufficient devices of class %s (ResourceClaim %s/%s "
                    "request %s needs %lld, %u free on node %s%s)", cls, e->ns, e->name, name,
                    (long long)rq->count, u->nfree, node, extra);
    return 1;
}

/*
** The units of one request of claim e. A firstAvailable request keeps the
** subrequests that could work at all; when none can, *why quotes the first.
*/
static int make_request(dra_search *sc, const tly_dra_claim_choice *e, const dra_spec *ds,
                        uint32_t r, const char **why)
{
    const tly_device_request *rq = &ds->spec->requests[r];
    dra_req *q = &sc->reqs[sc->nreqs++];
    *q = (dra_req){.first = sc->nunits, .fa = rq->first_available};
    if (!rq->first_available) {
        q->n = 1;
        return make_unit(sc, e, &sc->units[sc->nunits++], rq, &ds->reqs[r], rq->name, rq->name,
                         NULL, why);
    }
    char first[sizeof sc->c->why] = "";
    for (uint32_t k = 0; k < rq->nsubs; k++) {
        const char *w = NULL;
        dra_unit *u = &sc->units[sc->nunits];
        const dra_sels *alt = &ds->reqs[r].alts[k];
        if (make_unit(sc, e, u, &rq->subs[k], alt, alt->rname, rq->name, rq->subs[k].name, &w)) {
            sc->nunits++;
            q->n++;
        } else {
            free(u->cand);
            u->cand = NULL;
            if (!first[0])
                snprintf(first, sizeof first, "%s", w);
        }
    }
    if (q->n == 0)
        return whyf(sc->c, why, 0, "no subrequest of ResourceClaim %s/%s request %s can be "
                    "satisfied on node %s (the first: %s)", e->ns, e->name, rq->name,
                    sc->node ? sc->node : "?", first);
    return 1;
}

/* The fewest devices claim c can get (firstAvailable: its smallest alternative). */
static uint64_t claim_min_devices(const dra_search *sc, const dra_sclaim *c)
{
    uint64_t total = 0;
    for (uint32_t r = 0; r < c->nreq; r++) {
        const dra_req *q = &sc->reqs[c->rfirst + r];
        uint64_t least = UINT64_MAX;
        for (uint32_t k = 0; k < q->n; k++)
            if (sc->units[q->first + k].need < least)
                least = sc->units[q->first + k].need;
        total += least;
    }
    return total;
}

static uint32_t picks(const tly_dra *d, uint32_t gi)
{
    return d->devs[gi].pick == d->epoch ? d->devs[gi].npick : 0;
}

static tly_qty *pending(tly_dra *d, uint32_t counter)
{
    dra_counter *k = &d->counters[counter];
    if (k->epoch != d->epoch) {
        k->epoch = d->epoch;
        k->pending = (tly_qty){0, 0};
    }
    return &k->pending;
}

/* Whether the counters device gi consumes are still available with what this try picked. */
/* Whether device gi's counters are all available; *blocked gets the first that is not. */
static bool counters_fit(tly_dra *d, uint32_t gi, uint32_t *blocked)
{
    const dra_devent *de = &d->devs[gi];
    for (uint32_t k = 0; k < de->nuse; k++) {
        const dra_use *u = &d->uses[de->ufirst + k];
        tly_qty sum;
        if (tly_qty_add(*pending(d, u->counter), u->amount, &sum) != TLY_OK ||
            tly_qty_cmp(sum, d->counters[u->counter].avail) > 0) {
            *blocked = u->counter;
            return false;
        }
    }
    return true;
}

static bool attr_equal(const tly_attr *a, const tly_attr *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case TLY_ATTR_INT: return a->ival == b->ival;
    case TLY_ATTR_BOOL: return a->bval == b->bval;
    default: return a->str && b->str && strcmp(a->str, b->str) == 0;
    }
}

/* Whether constraint k of claim c names the unit's request ("req", or "req/sub"). */
static bool constraint_applies(const dra_constraint *k, const dra_unit *u)
{
    if (k->c->nrequests == 0)
        return true;
    for (uint32_t i = 0; i < k->c->nrequests; i++) {
        const char *n = k->c->requests[i];
        if (strcmp(n, u->base) == 0 || (u->sub && strcmp(n, u->name) == 0))
            return true;
    }
    return false;
}

/* The attribute device gi gives constraint k (NULL: the device lacks it). */
static const tly_attr *constraint_attr(const tly_dra *d, const dra_constraint *k, uint32_t gi)
{
    const dra_devent *de = &d->devs[gi];
    return tly_cel_device_attr(de->dev, de->slice->driver, k->domain, k->name);
}

/* Whether unit u of claim c may take device gi now (in use, counters, constraints). */
static bool usable(dra_search *sc, const dra_sclaim *c, const dra_unit *u, uint32_t gi)
{
    tly_dra *d = sc->d;
    if (u->admin) {
        /* Admin access shares devices with other claims, never within its own claim. */
        for (uint32_t k = c->e->first; k < sc->c->ndevs; k++)
            if (sc->c->devs[k].index == gi)
                return false;
    } else if (d->devs[gi].used || picks(d, gi)) {
        return false;
    }
    uint32_t blocked;
    if (!counters_fit(d, gi, &blocked)) {
        if (!sc->counters_hit) {
            /* The first counter met, with the device whose pool shares it (the message). */
            sc->counter = blocked;
            sc->counter_dev = gi;
        }
        sc->counters_hit = true;
        return false;
    }
    for (uint32_t k = 0; k < c->ds->spec->nconstraints; k++) {
        const dra_constraint *ck = &c->ds->cons[k];
        if (!constraint_applies(ck, u))
            continue;
        const tly_attr *a = constraint_attr(d, ck, gi);
        if (!a || (c->cs[k].n && !attr_equal(a, c->cs[k].val))) {
            sc->constraint_hit = true;
            return false;
        }
    }
    return true;
}

/* Takes device gi for unit u of claim c (push) or gives it back (pop, in reverse order). */
static void take(dra_search *sc, dra_sclaim *c, const dra_unit *u, uint32_t gi, bool push)
{
    tly_dra *d = sc->d;
    dra_devent *de = &d->devs[gi];
    if (de->pick != d->epoch) {
        de->pick = d->epoch;
        de->npick = 0;
    }
    de->npick = push ? de->npick + 1 : de->npick - 1;
    for (uint32_t k = 0; k < de->nuse; k++) {
        const dra_use *us = &d->uses[de->ufirst + k];
        tly_qty *p = pending(d, us->counter), r;
        if ((push ? tly_qty_add(*p, us->amount, &r) : tly_qty_sub(*p, us->amount, &r)) == TLY_OK)
            *p = r;
    }
    for (uint32_t k = 0; k < c->ds->spec->nconstraints; k++) {
        const dra_constraint *ck = &c->ds->cons[k];
        if (!constraint_applies(ck, u))
            continue;
        if (push && c->cs[k].n++ == 0)
            c->cs[k].val = constraint_attr(d, ck, gi);
        else if (!push)
            c->cs[k].n--;
    }
    if (!push) {
        sc->c->ndevs--;
        c->e->ndevs--;
        return;
    }
    tly_dra_dev dv = {u->name, u->rq->device_class, de->slice->driver, de->slice->pool,
                      de->dev->name, de->dev, gi, u->admin};
    add_dev(sc->c, c->e, &dv);
}

static int search(dra_search *sc, uint32_t ci, uint32_t ri, uint32_t alt, uint32_t slot,
                  uint32_t start);

/* Slot `slot` of unit u: one device, tried in the node's order from `start`. */
static int search_slot(dra_search *sc, uint32_t ci, uint32_t ri, uint32_t alt, uint32_t slot,
                       uint32_t start)
{
    dra_sclaim *c = &sc->claims[ci];
    const dra_unit *u = &sc->units[sc->reqs[c->rfirst + ri].first + alt];
    if ((uint64_t)c->e->ndevs + (u->need - slot) > CLAIM_MAX_DEVICES) {
        sc->limit_hit = true;
        return 0;
    }
    /* All: the devices are known, in order; ExactCount: combinations in list order. */
    uint32_t end = u->all ? slot + 1 : u->ncand;
    for (uint32_t k = u->all ? slot : start; k < end; k++) {
        uint32_t gi = u->cand[k];
        if (++sc->steps > sc->limit) {
            sc->stop = "bound";
            sc->stop_rc = -1;
            return -1;
        }
        bool hit = sc->constraint_hit;
        sc->constraint_hit = false;
        bool ok = usable(sc, c, u, gi);
        bool broke = sc->constraint_hit;
        sc->constraint_hit |= hit;
        if (!ok && u->all && broke) {
            /* As in Kubernetes: a constraint that refuses one of "all" devices is an error. */
            sc->stop = "constraint";
            whyf(sc->c, NULL, 0, "ResourceClaim %s/%s request %s wants all devices, but device "
                 "%s/%s/%s does not satisfy constraint matchAttribute of the claim", c->e->ns,
                 c->e->name, u->name, sc->d->devs[gi].slice->driver, sc->d->devs[gi].slice->pool,
                 sc->d->devs[gi].dev->name);
            return -1;
        }
        if (!ok)
            continue;
        take(sc, c, u, gi, true);
        int rc = search(sc, ci, ri, alt, slot + 1, k + 1);
        if (rc == 1)
            return 1;
        take(sc, c, u, gi, false);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/*
** Depth-first search, as the Kubernetes allocator does: claim ci, request
** ri, alternative alt (NONE: not chosen yet), device slot. Returns 1 when
** every claim is satisfied (the choice holds the devices), 0 when not, -1
** when the search stopped (sc->stop).
*/
static int search(dra_search *sc, uint32_t ci, uint32_t ri, uint32_t alt, uint32_t slot,
                  uint32_t start)
{
    if (ci == sc->nclaims)
        return 1;
    dra_sclaim *c = &sc->claims[ci];
    if (ri == 0 && alt == NONE) {
        c->e->first = sc->c->ndevs;
        c->e->ndevs = 0;
    }
    if (ri == c->nreq)
        return search(sc, ci + 1, 0, NONE, 0, 0);
    const dra_req *q = &sc->reqs[c->rfirst + ri];
    if (alt == NONE) {
        for (uint32_t k = 0; k < q->n; k++) {
            int rc = search(sc, ci, ri, k, 0, 0);
            if (rc != 0)
                return rc;
        }
        return 0;
    }
    if (slot == sc->units[q->first + alt].need)
        return search(sc, ci, ri + 1, NONE, 0, 0);
    return search_slot(sc, ci, ri, alt, slot, start);
}

/* The devices reachable from `node`: its own and allNodes slices', then selector slices'. */
static uint32_t *node_devices(tly_dra *d, const char *node, uint32_t *n)
{
    const uint32_t *list = d->alldevs;
    uint32_t nlist = d->nall;
    uintptr_t ni = node ? (uintptr_t)tly_strmap_get(&d->nodemap, node, strlen(node)) : 0;
    if (ni) {
        list = d->nodes[ni - 1].devs;
        nlist = d->nodes[ni - 1].n;
    }
    uint32_t *merged = tly_xmalloc((nlist + d->nsel + 1) * sizeof *merged);
    if (nlist)
        memcpy(merged, list, nlist * sizeof *merged);
    for (uint32_t k = 0; k < d->nsel; k++)
        if (dev_on_node(d, d->seldevs[k], node))
            merged[nlist++] = d->seldevs[k];
    *n = nlist;
    return merged;
}

static void search_free(dra_search *sc)
{
    for (uint32_t u = 0; u < sc->nunits; u++)
        free(sc->units[u].cand);
    for (uint32_t i = 0; i < sc->nclaims; i++)
        free(sc->claims[i].cs);
    free(sc->units);
    free(sc->reqs);
    free(sc->claims);
    free((void *)sc->list);
}

/* Adds claim e (spec ds) to the search; 0 with *why when one of its requests cannot work. */
static int search_add_claim(dra_search *sc, tly_dra_claim_choice *e, const dra_spec *ds,
                            const char **why)
{
    dra_sclaim *c = &sc->claims[sc->nclaims++];
    *c = (dra_sclaim){.e = e, .ds = ds, .rfirst = sc->nreqs, .nreq = ds->spec->nrequests};
    c->cs = tly_xcalloc(ds->spec->nconstraints + 1, sizeof *c->cs);
    for (uint32_t r = 0; r < ds->spec->nrequests; r++)
        if (!make_request(sc, e, ds, r, why))
            return 0;
    uint64_t least = claim_min_devices(sc, c);
    if (least > CLAIM_MAX_DEVICES)
        return whyf(sc->c, why, 0, "ResourceClaim %s/%s needs at least %llu devices on node %s, "
                    "more than the %d a claim may hold", e->ns, e->name,
                    (unsigned long long)least, sc->node ? sc->node : "?", CLAIM_MAX_DEVICES);
    return 1;
}

/* Why the search found nothing: what it met (a constraint, counters, the claim limit). */
static int search_failure(dra_search *sc, const char **why)
{
    const dra_sclaim *c = &sc->claims[0];
    for (uint32_t i = 0; i < sc->nclaims; i++)
        if (sc->claims[i].ds->spec->nconstraints) {
            c = &sc->claims[i];
            break;
        }
    char what[300] = "";
    if (sc->constraint_hit && c->ds->spec->nconstraints)
        snprintf(what, sizeof what, " (constraint matchAttribute %s of ResourceClaim %s/%s)",
                 c->ds->spec->constraints[0].match_attribute, c->e->ns, c->e->name);
    else if (sc->counters_hit) {
        const dra_counter *k = &sc->d->counters[sc->counter];
        const dra_devent *de = &sc->d->devs[sc->counter_dev];
        char av[TLY_QTY_BUFSZ];
        tly_qty_format(k->avail, av, sizeof av);
        snprintf(what, sizeof what, " (shared counters of partitionable devices exhausted: counter "
                 "%s of counter set %s in pool %s/%s, %s not held by allocated devices, cannot "
                 "also cover device %s)",
                 k->name, k->set, de->slice->driver, de->slice->pool, av, de->dev->name);
    }
    else if (sc->limit_hit)
        snprintf(what, sizeof what, " (at most %d devices per claim)", CLAIM_MAX_DEVICES);
    bool invalid = false;
    for (uint32_t k = 0; k < sc->nlist && !invalid; k++) {
        const char *w;
        invalid = !pool_ok(sc->d, sc->d->devs[sc->list[k]].pool, false, &w);
    }
    return whyf(sc->c, why, 0, "no combination of the devices on node %s satisfies every request "
                "of the pod's claims%s%s", sc->node ? sc->node : "?", what,
                invalid ? "; invalid resource pools were not used" : "");
}

/* The compiled spec whose requests claim entry e's devices satisfy. */
static const dra_spec *claim_spec_of(const tly_dra *d, const tly_dra_claim_choice *e)
{
    if (e->state != NONE)
        return &d->claims[e->state].spec;
    return &d->tmpls[map_get(&d->tmplmap, e->tmpl->meta.ns, e->tmpl->meta.name, NULL) - 1];
}

/*
** Chooses devices on `node` for every claim of the choice that tally
** allocates (not preallocated), all claims together, with backtracking.
*/
static int allocate_all(tly_dra *d, tly_dra_choice *c, const char *node, const char **why)
{
    dra_search sc = {.d = d, .c = c, .node = node,
                     .limit = d->budget < SEARCH_STEPS ? d->budget : SEARCH_STEPS};
    uint32_t nreq = 0, nunit = 0, ncl = 0;
    for (uint32_t i = 0; i < c->nclaims; i++) {
        const tly_dra_claim_choice *e = &c->claims[i];
        if (e->preallocated || !e->spec)
            continue;
        ncl++;
        for (uint32_t r = 0; r < e->spec->nrequests; r++, nreq++)
            nunit += e->spec->requests[r].first_available ? e->spec->requests[r].nsubs : 1;
    }
    if (ncl == 0)
        return 1;
    sc.list = node_devices(d, node, &sc.nlist);
    sc.claims = tly_xcalloc(ncl, sizeof *sc.claims);
    sc.reqs = tly_xcalloc(nreq + 1, sizeof *sc.reqs);
    sc.units = tly_xcalloc(nunit + 1, sizeof *sc.units);
    int rc = 1;
    for (uint32_t i = 0; i < c->nclaims && rc == 1; i++) {
        tly_dra_claim_choice *e = &c->claims[i];
        if (!e->preallocated && e->spec)
            rc = search_add_claim(&sc, e, claim_spec_of(d, e), why);
    }
    if (rc == 1) {
        rc = search(&sc, 0, 0, NONE, 0, 0);
        if (rc == 0)
            rc = search_failure(&sc, why);
        else if (rc < 0 && sc.stop_rc == 0) {
            rc = 0;  /* c->why holds the reason */
            if (why)
                *why = c->why;
        }
        else if (rc < 0 && sc.limit < SEARCH_STEPS)
            rc = whyf(c, why, TLY_DRA_BOUND, "the DRA search for the pod's claims stopped on node "
                      "%s: the pod's %llu device trials (tally's bound per pod) were used up "
                      "without an answer", node ? node : "?", (unsigned long long)d->budget_set);
        else if (rc < 0)
            rc = whyf(c, why, TLY_DRA_BOUND, "the DRA search for the pod's claims on node %s stopped after "
                      "%d device trials (tally's bound) without an answer", node ? node : "?",
                      SEARCH_STEPS);
    }
    d->budget -= sc.steps < d->budget ? sc.steps : d->budget;
    if (sc.steps > d->steps_max)
        d->steps_max = sc.steps;
    d->steps_total += sc.steps;
    d->tries++;
    search_free(&sc);
    return rc;
}

/* Whether an allocation's nodeSelector (its terms are ORed) selects `node`. */
static bool alloc_selects(const tly_dra *d, const tly_resource_claim *cl, const char *node)
{
    const tly_k8s_node *n = node ? tly_store_find(d->s, TLY_K_NODE, NULL, node) : NULL;
    for (uint32_t i = 0; n && i < cl->nalloc_node_terms; i++)
        if (tly_node_term_matches(&cl->alloc_node_terms[i], n))
            return true;
    return false;
}

/* Adds the devices of an allocated claim; 0 when they are not on `node`. */
static int take_allocated(tly_dra *d, tly_dra_claim_choice *e, const dra_claim *st,
                          const char *node, tly_dra_choice *c, const char **why)
{
    if (st->claim->allocated && st->claim->has_alloc_node_selector &&
        !alloc_selects(d, st->claim, node))
        return whyf(c, why, 0, "ResourceClaim %s/%s is allocated for other nodes (its "
                    "allocation's nodeSelector does not select node %s)", e->ns, e->name,
                    node ? node : "?");
    if (!st->claim->allocated) {
        /* Allocated by an earlier commit of this run. */
        if (node && st->run_node && strcmp(st->run_node, node) != 0)
            return whyf(c, why, 0, "ResourceClaim %s/%s is allocated on another node (%s)", e->ns,
                        e->name, st->run_node);
        for (uint32_t k = 0; k < st->nrun_devs; k++)
            add_dev(c, e, &st->run_devs[k]);
        return 1;
    }
    const tly_resource_claim *cl = st->claim;
    for (uint32_t r = 0; r < cl->nresults; r++) {
        const tly_device_result *res = &cl->results[r];
        uint32_t gi = result_dev(d, res->driver, res->pool, res->device);
        /* Without a nodeSelector, where its devices are reachable says where it fits. */
        if (gi != NONE && !cl->has_alloc_node_selector && !dev_on_node(d, gi, node))
            return d->devs[gi].node_name
                       ? whyf(c, why, 0, "ResourceClaim %s/%s is allocated on another node (%s)",
                              e->ns, e->name, d->devs[gi].node_name)
                       : whyf(c, why, 0, "ResourceClaim %s/%s is allocated on devices node %s "
                              "does not reach", e->ns, e->name, node ? node : "?");
        tly_dra_dev dv = {res->request, result_class(&cl->spec, res->request), res->driver,
                          res->pool, res->device, gi != NONE ? d->devs[gi].dev : NULL, gi,
                          res->admin_access};
        add_dev(c, e, &dv);
    }
    return 1;
}

/*
** "<pod>-<podClaimName>", the name tally gives a pod's template claim
** (Kubernetes adds a random suffix). Cached: tly_dra_try() runs per node.
*/
static const char *template_claim_name(tly_dra *d, const tly_pod *p, const char *pc)
{
    char buf[1024];
    size_t n = key3(buf, sizeof buf, p->meta.ns, p->meta.name, pc ? pc : "");
    const char *name = n ? tly_strmap_get(&d->tnames, buf, n) : NULL;
    if (name)
        return name;
    name = tly_arena_printf(d->a, "%s-%s", p->meta.name, pc ? pc : "");
    if (n)
        tly_strmap_put(&d->tnames, tly_arena_strndup(d->a, buf, n), n, (void *)name);
    return name;
}

void tly_dra_set_budget(tly_dra *d, uint64_t trials)
{
    d->budget = d->budget_set = trials;
}

void tly_dra_search_stats(const tly_dra *d, uint64_t *max, uint64_t *total, uint64_t *tries)
{
    *max = d ? d->steps_max : 0;
    *total = d ? d->steps_total : 0;
    *tries = d ? d->tries : 0;
}

int tly_dra_try(tly_dra *d, const tly_pod *p, const char *node, const char *queue,
                tly_dra_choice *out, const char **why)
{
    out->pod = p;
    out->node = node;
    out->queue = queue;
    out->nclaims = 0;
    out->ndevs = 0;
    out->why[0] = '\0';
    if (why)
        *why = NULL;
    if (!p || p->nclaims == 0)
        return 1;
    if (++d->epoch == 0) {
        for (uint32_t i = 0; i < d->ndevs; i++)
            d->devs[i].pick = 0;
        d->epoch = 1;
    }
    const char *ns = p->meta.ns;

    /* Pass 1: resolve every claim and reject what tally cannot evaluate, whatever the node. */
    bool missing = false;
    char miss[sizeof out->why];
    for (uint32_t i = 0; i < p->nclaims; i++) {
        const tly_pod_claim *pc = &p->claims[i];
        if (!pc->claim_name && !pc->template_name)
            continue;
        tly_dra_claim_choice *e = add_claim(out);
        e->ns = ns;
        e->pod_claim = pc->name;
        e->charge = true;
        const dra_spec *ds = NULL;
        uint32_t ci = 0;
        if (pc->claim_name) {
            e->name = pc->claim_name;
            ci = map_get(&d->claimmap, ns, pc->claim_name, NULL);
            if (!ci && !missing) {
                missing = true;
                snprintf(miss, sizeof miss, "ResourceClaim %s/%s does not exist", ns,
                         pc->claim_name);
            }
        } else {
            e->from_template = true;
            e->name = template_claim_name(d, p, pc->name);
            /* A bound pod's claim generated from the template, if the input has it. */
            ci = map_get(&d->genmap, ns, p->meta.name, pc->name);
            uint32_t ti = map_get(&d->tmplmap, ns, pc->template_name, NULL);
            if (ti) {
                e->tmpl = tly_store_at(d->s, TLY_K_RESOURCE_CLAIM_TEMPLATE, ti - 1);
                ds = &d->tmpls[ti - 1];
            } else if (!ci && !missing) {
                missing = true;
                snprintf(miss, sizeof miss, "ResourceClaimTemplate %s/%s does not exist", ns,
                         pc->template_name);
            }
        }
        if (ci) {
            dra_claim *st = &d->claims[ci - 1];
            e->state = ci - 1;
            e->claim = st->claim;
            e->name = st->claim->meta.name;
            ds = &st->spec;
            e->preallocated = st->claim->allocated || st->run_alloc;
            if (st->claim->meta.deleted != TLY_NO_TIME && !missing) {
                /* As kube-scheduler: a claim being deleted is not used, on any node. */
                missing = true;
                snprintf(miss, sizeof miss, "ResourceClaim %s/%s is being deleted", ns,
                         st->claim->meta.name);
            }
            if (!e->from_template && queue) {
                const dra_qref *q = qref(st, queue, NULL);
                e->charge = !(q && q->charged > 0);
            }
        }
        e->spec = ds ? ds->spec : NULL;
        if (ds && !e->preallocated) {
            int rc = check_spec(d, e, ds, why, &missing, miss, sizeof miss);
            if (rc < 0)
                return rc;
        }
    }
    if (missing)
        return whyf(out, why, 0, "%s", miss);

    /* Pass 2: devices on this node: allocated claims', then the others' together. */
    for (uint32_t i = 0; i < out->nclaims; i++) {
        tly_dra_claim_choice *e = &out->claims[i];
        e->first = out->ndevs;
        e->ndevs = 0;
        if (e->preallocated) {
            int rc = take_allocated(d, e, &d->claims[e->state], node, out, why);
            if (rc != 1)
                return rc;
        }
    }
    return allocate_all(d, out, node, why);
}

const char *tly_dra_pod_invalid(const tly_dra *d, const tly_pod *p)
{
    for (uint32_t i = 0; p && i < p->nclaims; i++) {
        const tly_pod_claim *pc = &p->claims[i];
        uint32_t ci = 0, ti = 0;
        if (pc->claim_name)
            ci = map_get(&d->claimmap, p->meta.ns, pc->claim_name, NULL);
        else if (pc->template_name) {
            ci = map_get(&d->genmap, p->meta.ns, p->meta.name, pc->name);
            ti = map_get(&d->tmplmap, p->meta.ns, pc->template_name, NULL);
        }
        if (ci && d->claims[ci - 1].spec.invalid)
            return d->claims[ci - 1].spec.invalid;
        if (!ci && ti && d->tmpls[ti - 1].invalid)
            return d->tmpls[ti - 1].invalid;
    }
    return NULL;
}

void tly_dra_commit(tly_dra *d, const tly_dra_choice *c)
{
    for (uint32_t i = 0; i < c->nclaims; i++) {
        const tly_dra_claim_choice *e = &c->claims[i];
        if (!e->preallocated) {
            for (uint32_t k = 0; k < e->ndevs; k++)
                if (c->devs[e->first + k].index != NONE && !c->devs[e->first + k].admin_access)
                    dev_use(d, c->devs[e->first + k].index, +1);
            if (e->state != NONE) {
                dra_claim *st = &d->claims[e->state];
                st->run_alloc = true;
                st->run_node = c->node ? tly_arena_strdup(d->a, c->node) : NULL;
                free(st->run_devs);
                st->run_devs = tly_xcalloc(e->ndevs ? e->ndevs : 1, sizeof *st->run_devs);
                if (e->ndevs)
                    memcpy(st->run_devs, &c->devs[e->first], e->ndevs * sizeof *st->run_devs);
                st->nrun_devs = e->ndevs;
            }
        }
        if (e->state != NONE && !e->from_template && c->queue) {
            dra_qref *q = qref(&d->claims[e->state], c->queue, d);
            q->users++;
            if (e->charge)
                q->charged++;
        }
    }
}

void tly_dra_undo(tly_dra *d, const tly_dra_choice *c)
{
    for (uint32_t i = c->nclaims; i-- > 0;) {
        const tly_dra_claim_choice *e = &c->claims[i];
        if (e->state != NONE && !e->from_template && c->queue) {
            dra_qref *q = qref(&d->claims[e->state], c->queue, NULL);
            if (q) {
                if (q->users)
                    q->users--;
                if (e->charge && q->charged)
                    q->charged--;
            }
        }
        if (!e->preallocated) {
            for (uint32_t k = 0; k < e->ndevs; k++) {
                uint32_t gi = c->devs[e->first + k].index;
                if (gi != NONE && !c->devs[e->first + k].admin_access)
                    dev_use(d, gi, -1);
            }
            if (e->state != NONE) {
                dra_claim *st = &d->claims[e->state];
                st->run_alloc = false;
                st->run_node = NULL;
                free(st->run_devs);
                st->run_devs = NULL;
                st->nrun_devs = 0;
            }
        }
    }
}

/* ====================================================================== */
/* GPU count and charges                                                  */
/* ====================================================================== */

bool tly_dra_is_gpu_name(const char *name)
{
    if (!name)
        return false;
    for (const char *t = name; t[0] && t[1] && t[2]; t++)
        if ((t[0] | 0x20) == 'g' && (t[1] | 0x20) == 'p' && (t[2] | 0x20) == 'u')
            return true;
    return false;
}

static bool dev_is_gpu(const tly_dra_dev *dv)
{
    return tly_dra_is_gpu_name(dv->device_class) || tly_dra_is_gpu_name(dv->driver);
}

uint32_t tly_dra_job_gpus(const tly_dra *d, const tly_pod *p, const char *queue)
{
    uint64_t total = 0;
    for (uint32_t i = 0; p && i < p->nclaims; i++) {
        const tly_pod_claim *pc = &p->claims[i];
        const tly_claim_spec *spec = NULL;
        uint32_t ci = 0;
        if (pc->claim_name) {
            ci = map_get(&d->claimmap, p->meta.ns, pc->claim_name, NULL);
        } else if (pc->template_name) {
            ci = map_get(&d->genmap, p->meta.ns, p->meta.name, pc->name);
            uint32_t ti = map_get(&d->tmplmap, p->meta.ns, pc->template_name, NULL);
            if (!ci && ti)
                spec = d->tmpls[ti - 1].spec;
        }
        if (ci) {
            const dra_claim *st = &d->claims[ci - 1];
            spec = st->spec.spec;
            if (pc->claim_name && queue) {
                const dra_qref *q = qref((dra_claim *)st, queue, NULL);
                if (q && q->charged > 0)
                    continue;  /* this queue already carries the shared claim */
            }
        }
        for (uint32_t r = 0; spec && r < spec->nrequests; r++) {
            const tly_device_request *rq = &spec->requests[r];
            if (rq->first_available || !tly_dra_is_gpu_name(rq->device_class))
                continue;
            bool all = rq->allocation_mode && strcmp(rq->allocation_mode, "All") == 0;
            total += all ? 1 : (uint64_t)(rq->count > 0 ? rq->count : 1);
        }
    }
    return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

uint32_t tly_dra_gpu_devices(const tly_dra_choice *c)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nclaims; i++) {
        const tly_dra_claim_choice *e = &c->claims[i];
        for (uint32_t k = 0; e->charge && k < e->ndevs; k++)
            n += dev_is_gpu(&c->devs[e->first + k]);
    }
    return n;
}

static tly_qty zero_qty(void) { return (tly_qty){0, TLY_QFMT_DECIMAL_SI}; }

static void qadd(tly_qty *sum, tly_qty x)
{
    tly_qty r;
    if (tly_qty_add(*sum, x, &r) == TLY_OK)
        *sum = r;
}

static const tly_capacity *dev_capacity(const tly_dra_dev *dv, const char *name)
{
    for (uint32_t i = 0; dv->dev && i < dv->dev->ncapacity; i++)
        if (dv->dev->capacity[i].name && name_matches(dv->dev->capacity[i].name, name, dv->driver))
            return &dv->dev->capacity[i];
    return NULL;
}

tly_qty tly_dra_gpu_memory(const tly_dra_choice *c)
{
    tly_qty sum = {0, TLY_QFMT_BINARY_SI};
    for (uint32_t i = 0; i < c->nclaims; i++) {
        const tly_dra_claim_choice *e = &c->claims[i];
        for (uint32_t k = 0; e->charge && k < e->ndevs; k++) {
            const tly_dra_dev *dv = &c->devs[e->first + k];
            const tly_capacity *cap = dev_is_gpu(dv) ? dev_capacity(dv, "memory") : NULL;
            if (cap)
                qadd(&sum, cap->value);
        }
    }
    return sum;
}

/* match.dra.deviceAttributes: every listed attribute present with an equal value. */
static bool attrs_match(const tly_accsrc *src, const tly_dra_dev *dv)
{
    for (uint32_t i = 0; i < src->nmatch_attrs; i++) {
        const tly_attr *want = &src->match_attrs[i], *have = NULL;
        for (uint32_t k = 0; dv->dev && k < dv->dev->nattrs && !have; k++)
            if (dv->dev->attrs[k].name && name_matches(dv->dev->attrs[k].name, want->name, dv->driver))
                have = &dv->dev->attrs[k];
        if (!have || have->type != want->type)
            return false;
        switch (want->type) {
        case TLY_ATTR_INT:
            if (have->ival != want->ival)
                return false;
            break;
        case TLY_ATTR_BOOL:
            if (have->bval != want->bval)
                return false;
            break;
        default:
            if (!have->str || !want->str || strcmp(have->str, want->str) != 0)
                return false;
        }
    }
    return true;
}




static bool config_applies(const tly_opaque_config *oc, const char *driver, const char *request)
{
    if (!oc->driver || strcmp(oc->driver, driver) != 0)
        return false;
    if (oc->nrequests == 0)
        return true;
    size_t len = request ? strcspn(request, "/") : 0;
    for (uint32_t i = 0; i < oc->nrequests; i++)
        if (request && (strcmp(oc->requests[i], request) == 0 ||
                        (strlen(oc->requests[i]) == len && memcmp(oc->requests[i], request, len) == 0)))
            return true;
    return false;
}

/*
** The opaque config value at src's path for device dv of claim e: the last
** applicable config wins (Kubernetes applies configs in order). Allocated
** claims carry their effective config in the allocation; others their spec's.
*/
static const tly_node *opaque_value(const tly_dra_claim_choice *e, const tly_accsrc *src,
                                    const tly_dra_dev *dv)
{
    const tly_opaque_config *cfg = NULL;
    uint32_t n = 0;
    if (e->claim && e->claim->allocated && e->claim->nalloc_config) {
        cfg = e->claim->alloc_config;
        n = e->claim->nalloc_config;
    } else if (e->spec) {
        cfg = e->spec->config;
        n = e->spec->nconfig;
    }
    const tly_node *found = NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (!config_applies(&cfg[i], src->opaque_driver, dv->request) || !cfg[i].parameters)
            continue;
        const tly_node *v = tly_node_path(cfg[i].parameters, src->opaque_path);
        if (v)
            found = v;
    }
    return found;
}

void tly_dra_charges(const tly_dra *d, const tly_queues *qs, const tly_pod *p,
                     const tly_dra_choice *c, tly_qty *out, const char **problem)
{
    if (problem)
        *problem = NULL;
    if (c->nclaims == 0)
        return;
    const tly_k8s_node *node = NULL;
    bool node_looked = false;
    for (uint32_t a = 0; a < tly_queues_naccres(qs); a++) {
        if (tly_queues_accres_is_gpu_memory(qs, a))
            continue;  /* reserved: tly_dra_gpu_memory() */
        const tly_accres *ar = tly_queues_accres(qs, a);
        tly_qty sum = out[a];
        for (uint32_t s = 0; s < ar->nsources; s++) {
            const tly_accsrc *src = &ar->sources[s];
            if (src->kind != TLY_SRC_DRA || !src->device_class)
                continue;
            if (src->match_node_labels.n) {
                if (!node_looked) {
                    node = c->node ? tly_store_find(d->s, TLY_K_NODE, NULL, c->node) : NULL;
                    node_looked = true;
                }
                if (!tly_node_labels_match(&src->match_node_labels, node))
                    continue;
            }
            for (uint32_t i = 0; i < c->nclaims; i++) {
                const tly_dra_claim_choice *e = &c->claims[i];
                for (uint32_t k = 0; e->charge && k < e->ndevs; k++) {
                    const tly_dra_dev *dv = &c->devs[e->first + k];
                    if (!dv->device_class || strcmp(dv->device_class, src->device_class) != 0 ||
                        !attrs_match(src, dv))
                        continue;
                    tly_qty amount = zero_qty();
                    if (src->qkind == TLY_QSRC_DRA_CAPACITY) {
                        const tly_capacity *cap =
                            src->capacity_name ? dev_capacity(dv, src->capacity_name) : NULL;
                        if (cap)
                            amount = cap->value;
                    } else if (src->qkind == TLY_QSRC_DRA_OPAQUE) {
                        if (!src->opaque_driver || !src->opaque_path ||
                            strcmp(dv->driver, src->opaque_driver) != 0)
                            continue;
                        const tly_node *v = opaque_value(e, src, dv);
                        if (!v)
                            continue;  /* not configured: nothing to charge */
                        tly_qty num;
                        bool ok = tly_node_is_scalar(v) && v->len > 0 &&
                                  tly_qty_parse_str(v->str, &num) == TLY_OK &&
                                  tly_qty_sign(num) >= 0;
                        /* The unit multiplies a plain number; a value with its own suffix is as written. */
                        if (ok && v->str[v->len - 1] >= '0' && v->str[v->len - 1] <= '9')
                            ok = tly_qty_times(num, tly_unit_multiplier(src->opaque_unit), &amount);
                        else if (ok)
                            amount = num;
                        if (!ok) {
                            if (problem)
                                *problem = tly_arena_printf(
                                    d->a,
                                    "opaque config %s of ResourceClaim %s/%s (driver %s) is "
                                    "\"%s\", not a non-negative number; AccountedResource %s "
                                    "charges nothing for it",
                                    src->opaque_path, e->ns, e->name, src->opaque_driver,
                                    tly_node_is_scalar(v) ? v->str : tly_ntype_name(v->type),
                                    ar->meta.name);
                            continue;
                        }
                    } else {
                        amount = tly_qty_from_int(1, TLY_QFMT_DECIMAL_SI);
                    }
                    qadd(&sum, amount);
                }
            }
        }
        out[a] = sum;
    }
    (void)p;
}

/* ====================================================================== */
/* Shared claims                                                          */
/* ====================================================================== */

static dra_claim *claim_state(const tly_dra *d, const char *ns, const char *name)
{
    uint32_t ci = map_get(&d->claimmap, ns, name, NULL);
    return ci ? &d->claims[ci - 1] : NULL;
}

bool tly_dra_claim_queue_check(tly_dra *d, const tly_pod *p, const char *queue, char **message)
{
    if (message)
        *message = NULL;
    for (uint32_t i = 0; p && queue && i < p->nclaims; i++) {
        const tly_pod_claim *pc = &p->claims[i];
        if (!pc->claim_name)
            continue;  /* template claims are private to the pod */
        dra_claim *st = claim_state(d, p->meta.ns, pc->claim_name);
        for (uint32_t k = 0; st && k < st->nq; k++) {
            if (st->q[k].users == 0 || strcmp(st->q[k].queue, queue) == 0)
                continue;
            if (message)
                *message = tly_arena_printf(
                    d->a, "ResourceClaim %s/%s is shared with queue %s; pods of queue %s cannot use it",
                    p->meta.ns, pc->claim_name, st->q[k].queue, queue);
            return false;
        }
    }
    return true;
}

void tly_dra_claim_note_user(tly_dra *d, const char *ns, const char *name, const char *queue)
{
    dra_claim *st = queue ? claim_state(d, ns, name) : NULL;
    if (st)
        qref(st, queue, d)->users++;
}

bool tly_dra_claim_charged(const tly_dra *d, const char *ns, const char *name, const char *queue)
{
    dra_claim *st = queue ? claim_state(d, ns, name) : NULL;
    const dra_qref *q = st ? qref(st, queue, NULL) : NULL;
    return q && q->charged > 0;
}

void tly_dra_claim_mark_charged(tly_dra *d, const char *ns, const char *name, const char *queue)
{
    dra_claim *st = queue ? claim_state(d, ns, name) : NULL;
    if (st)
        qref(st, queue, d)->charged++;
}

/* ====================================================================== */
/* Misc                                                                   */
/* ====================================================================== */

uint32_t tly_dra_node_gpu_devices(const tly_dra *d, const char *node)
{
    const uint32_t *list = d->alldevs;
    uint32_t n = d->nall, gpus = 0;
    uintptr_t ni = node ? (uintptr_t)tly_strmap_get(&d->nodemap, node, strlen(node)) : 0;
    if (ni) {
        list = d->nodes[ni - 1].devs;
        n = d->nodes[ni - 1].n;
    }
    for (uint32_t k = 0; k < n; k++)
        gpus += tly_dra_is_gpu_name(d->devs[list[k]].slice->driver);
    return gpus;
}

int tly_dra_cel_eval(tly_dra *d, const char *expr, const char *driver, const tly_device *dev,
                     const char **why)
{
    const char *err;
    tly_cel_prog *e = cel_compile(d->a, expr, &err);
    if (why)
        *why = err;
    if (!e)
        return -1;
    return cel_match(e, driver, dev) ? 1 : 0;
}
