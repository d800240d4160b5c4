/*
** queues.c: the queue tree, its ledger and KAI's queue checks (queues.h).
** This is where a queue limit is checked.
**
** Units. KAI writes queue amounts as plain numbers: cpu in millicores,
** memory in megabytes (10^6 bytes), gpu in devices. tally converts them once
** to the units of the effective requests (cpu cores, memory bytes, GPU
** devices) as exact quantities, so every comparison is an exact integer
** comparison in nano-units. -1 is unlimited; for memory any negative value
** is unlimited (KAI clamps it), for cpu and gpu only -1 (another negative
** value is a bound that rejects every positive request, as in KAI).
**
** Messages are KAI's (kai-facts 2.7): amounts are shown with at most three
** decimals, trailing zeros dropped, in cores, GB (10^9 bytes) and GPUs; the
** queue is named by its displayName when it has one.
*/
#include "tally/queues.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/error.h"
#include "strmap.h"

typedef struct {
    const tly_queue *q;
    int32_t parent;
    bool leaf;
    bool usable;
    const char *unusable;        /* why not, for QueueDoesNotExist */
    bool bounded[2][TLY_QR_COUNT];   /* [0] quota, [1] limit: a finite bound */
    tly_qty bound[2][TLY_QR_COUNT];  /* in cores / bytes / devices */
    tly_qty used[TLY_QR_COUNT], used_np[TLY_QR_COUNT];
    tly_qty rsv[TLY_QR_COUNT], rsv_np[TLY_QR_COUNT];
    tly_rvec alloc, alloc_np;
    tly_qty *acc_used, *acc_rsv;     /* per AccountedResource */
    tly_qty *acc_limit;              /* effective limit per AccountedResource (negative: none) */
    const char *missing_ref;         /* own unresolved resourceRef */
    const char *path_missing_ref;    /* own or an ancestor's */
    int32_t path_missing_at;         /* the queue that holds it */
} qnode;

struct tly_queues {
    atomic_int refs;           /* tly_queues_retain */
    tly_store *s;
    tly_arena *a;
    qnode *q;
    uint32_t n;
    const tly_accres **acc;
    uint32_t nacc;
    bool *acc_gpu_memory;            /* the reserved name gpu-memory */
    tly_gating_mode gating;    /* resolved: ALL, OPT_IN or OFF */
    tly_strmap msgs;           /* a verdict's figures -> its message (verdict_message) */
};

static const tly_qty ZERO = {0, TLY_QFMT_DECIMAL_SI};

static tly_qty qty_mul(tly_qty q, int64_t num, int64_t den)
{
    /* q * num / den rounded away from zero; inputs are small, so no overflow
       for any amount a queue can name (checked anyway). */
    tly_i128 v;
    if (__builtin_mul_overflow(q.nanos, (tly_i128)num, &v))
        return (tly_qty){q.nanos < 0 ? -TLY_QTY_MAX_NANOS : TLY_QTY_MAX_NANOS, q.fmt};
    tly_i128 r = v / den;
    if (v % den)
        r += v < 0 ? -1 : 1;
    return (tly_qty){r, TLY_QFMT_DECIMAL_SI};
}

static bool is_minus_one(tly_qty q) { return q.nanos == -(tly_i128)1000000000; }

/* Converts one KAI amount; returns whether it is a finite bound. */
static bool kai_bound(int r, bool has_resources, bool has, tly_qty raw, tly_qty *out)
{
    if (!has_resources)
        return false;                 /* no spec.resources: nothing set */
    if (!has)
        raw = ZERO;                   /* omitted with spec.resources present: 0, a hard bound */
    if (is_minus_one(raw))
        return false;
    if (r == TLY_QR_MEMORY && tly_qty_sign(raw) < 0)
        return false;                 /* KAI clamps any negative memory to -1 */
    switch (r) {
    case TLY_QR_CPU: *out = qty_mul(raw, 1, 1000); break;           /* millicores -> cores */
    case TLY_QR_MEMORY: *out = qty_mul(raw, 1000000, 1); break;     /* MB -> bytes */
    default: *out = raw; *out = (tly_qty){raw.nanos, TLY_QFMT_DECIMAL_SI}; break;
    }
    return true;
}

static int cmp_accres(const void *a, const void *b)
{
    return strcmp((*(const tly_accres *const *)a)->meta.name, (*(const tly_accres *const *)b)->meta.name);
}

/* The first AccountedResource (name order) whose name is not below name. */
static uint32_t acc_lower_bound(const tly_queues *qs, const char *name)
{
    uint32_t lo = 0, hi = qs->nacc;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (strcmp(qs->acc[mid]->meta.name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

tly_queues *tly_queues_create(tly_store *s)
{
    tly_queues *qs = tly_xcalloc(1, sizeof *qs);
    atomic_init(&qs->refs, 1);
    qs->s = s;
    qs->a = tly_arena_create(64 * 1024);
    qs->n = tly_store_count(s, TLY_K_QUEUE);
    qs->q = tly_xcalloc(qs->n + 1, sizeof *qs->q);
    qs->nacc = tly_store_count(s, TLY_K_ACCOUNTED_RESOURCE);
    qs->acc = tly_xmalloc((qs->nacc + 1) * sizeof *qs->acc);
    for (uint32_t a = 0; a < qs->nacc; a++)
        qs->acc[a] = tly_store_at(s, TLY_K_ACCOUNTED_RESOURCE, a);
    qsort(qs->acc, qs->nacc, sizeof *qs->acc, cmp_accres);
    qs->acc_gpu_memory = tly_arena_zalloc(qs->a, (qs->nacc + 1) * sizeof *qs->acc_gpu_memory);
    for (uint32_t a = 0; a < qs->nacc; a++)
        qs->acc_gpu_memory[a] = strcmp(qs->acc[a]->meta.name, "gpu-memory") == 0;
    qs->gating = tly_gating_mode_of(s);

    for (uint32_t i = 0; i < qs->n; i++) {
        qnode *n = &qs->q[i];
        n->q = tly_store_at(s, TLY_K_QUEUE, i);
        n->parent = -1;
        n->leaf = true;
        n->usable = true;
        n->path_missing_at = -1;
        tly_rvec_init(&n->alloc);
        tly_rvec_init(&n->alloc_np);
        n->acc_used = tly_arena_zalloc(qs->a, (qs->nacc + 1) * sizeof *n->acc_used);
        n->acc_rsv = tly_arena_zalloc(qs->a, (qs->nacc + 1) * sizeof *n->acc_rsv);
        const tly_queue_resource *qr[TLY_QR_COUNT] = {&n->q->cpu, &n->q->memory, &n->q->gpu};
        for (int r = 0; r < TLY_QR_COUNT; r++) {
            n->bounded[0][r] = kai_bound(r, n->q->has_resources, qr[r]->has_quota, qr[r]->quota,
                                         &n->bound[0][r]);
            n->bounded[1][r] = kai_bound(r, n->q->has_resources, qr[r]->has_limit, qr[r]->limit,
                                         &n->bound[1][r]);
        }
        n->acc_limit = tly_arena_alloc(qs->a, (qs->nacc + 1) * sizeof *n->acc_limit);
        for (uint32_t a = 0; a < qs->nacc; a++)
            n->acc_limit[a] = qs->acc[a]->has_default_limit ? qs->acc[a]->default_limit
                                                            : tly_qty_from_int(-1, TLY_QFMT_DECIMAL_SI);
        for (uint32_t k = 0; k < n->q->naccrefs; k++) {
            const tly_queue_accref *e = &n->q->accrefs[k];
            if (!e->ref || !*e->ref)
                continue;
            uint32_t a = acc_lower_bound(qs, e->ref);
            if (a == qs->nacc || strcmp(e->ref, qs->acc[a]->meta.name) != 0) {
                if (!n->missing_ref)
                    n->missing_ref = e->ref;  /* the first reference that names nothing */
                continue;
            }
            for (; e->has_limit && a < qs->nacc && !strcmp(e->ref, qs->acc[a]->meta.name); a++)
                n->acc_limit[a] = e->limit;
        }
    }
    for (uint32_t i = 0; i < qs->n; i++) {
        qnode *n = &qs->q[i];
        const char *p = n->q->parent;
        if (!p || !*p)
            continue;
        int32_t pi = tly_queues_find(qs, p);
        if (pi < 0 || (uint32_t)pi == i) {
            n->usable = false;
            n->unusable = tly_arena_printf(qs->a, "its parent queue '%s' does not exist", p);
        } else {
            n->parent = pi;
            qs->q[pi].leaf = false;
        }
    }
    /* Unusable subtrees and parentQueue cycles; the first missing ref on each path. */
    for (uint32_t i = 0; i < qs->n; i++) {
        qnode *n = &qs->q[i];
        uint32_t steps = 0;
        for (int32_t j = (int32_t)i; j >= 0; j = qs->q[j].parent) {
            if (++steps > qs->n + 1) {
                n->usable = false;
                n->unusable = tly_arena_printf(qs->a, "its parentQueue chain forms a cycle");
                break;
            }
            if (!qs->q[j].usable && n->usable) {
                n->usable = false;
                /* Name the root cause: the ancestor whose own parent is missing. */
                n->unusable = (uint32_t)j == i
                                  ? qs->q[j].unusable
                                  : tly_arena_printf(qs->a, "the parent queue '%s' of its ancestor '%s' does not exist",
                                                     qs->q[j].q->parent, qs->q[j].q->meta.name);
            }
            if (!n->path_missing_ref && qs->q[j].missing_ref) {
                n->path_missing_ref = qs->q[j].missing_ref;
                n->path_missing_at = j;
            }
        }
    }
    return qs;
}

tly_queues *tly_queues_retain(tly_queues *qs)
{
    atomic_fetch_add(&qs->refs, 1);
    return qs;
}

void tly_queues_destroy(tly_queues *qs)
{
    if (!qs || atomic_fetch_sub(&qs->refs, 1) != 1)
        return;
    for (uint32_t i = 0; i < qs->n; i++) {
        tly_rvec_free(&qs->q[i].alloc);
        tly_rvec_free(&qs->q[i].alloc_np);
    }
    free(qs->q);
    free(qs->acc);
    tly_strmap_free(&qs->msgs);
    tly_arena_destroy(qs->a);
    free(qs);
}

int32_t tly_queues_find(const tly_queues *qs, const char *name)
{
    uint32_t lo = 0, hi = qs->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(qs->q[mid].q->meta.name, name);
        if (c == 0)
            return (int32_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

uint32_t tly_queues_count(const tly_queues *qs) { return qs->n; }
const tly_queue *tly_queues_queue(const tly_queues *qs, uint32_t i) { return qs->q[i].q; }
int32_t tly_queues_parent(const tly_queues *qs, uint32_t i) { return qs->q[i].parent; }
uint32_t tly_queues_naccres(const tly_queues *qs) { return qs->nacc; }
const tly_accres *tly_queues_accres(const tly_queues *qs, uint32_t a) { return qs->acc[a]; }

static const char *display(const qnode *n)
{
    return (n->q->display_name && *n->q->display_name) ? n->q->display_name : n->q->meta.name;
}

int32_t tly_queues_admissible(tly_queues *qs, const char *name, tly_qverdict *v)
{
    v->ok = false;
    int32_t i = tly_queues_find(qs, name);
    if (i < 0) {
        v->reason = "QueueDoesNotExist";
        v->message = tly_arena_printf(qs->a, "Queue '%s' does not exist", name);
        return -1;
    }
    qnode *n = &qs->q[i];
    if (!n->usable) {
        v->reason = "QueueDoesNotExist";
        v->message = tly_arena_printf(qs->a, "Queue '%s' cannot take workloads: %s", name, n->unusable);
        return -1;
    }
    if (!n->leaf) {
        v->reason = "NonLeafQueue";
        v->message = tly_arena_printf(qs->a, "Queue '%s' has child queues; only leaf queues take workloads",
                                      name);
        return -1;
    }
    if (n->path_missing_ref) {
        v->reason = "AccountedResourceNotFound";
        v->message = tly_arena_printf(
            qs->a, "queue %s references AccountedResource \"%s\", which does not exist; workloads in %s are held until it exists",
            qs->q[n->path_missing_at].q->meta.name, n->path_missing_ref,
            n->path_missing_at == i ? "the queue" : "its subtree");
        return -1;
    }
    v->ok = true;
    v->reason = NULL;
    v->message = NULL;
    return i;
}

/*
** x / div as KAI prints it: humanize.FtoaWithDigits(x, 3), which is Go's
** strconv.FormatFloat(f, 'f', 3, 64) with trailing zeros dropped, where f
** is KAI's float64 amount (millicores / 1000, bytes / 1e9, GPU devices).
** This is the one place tally uses floating point: to print a message the
** way KAI prints it (1234500000 bytes is "1.234" GB there, because the
** double nearest 1.2345 lies below it). No decision depends on it.
*/
static char *humanize(tly_arena *a, tly_qty x, int64_t div)
{
    double f;
    if (div == 1000000000)
        f = (double)(long long)(x.nanos / 1000000000) / 1e9;   /* bytes -> GB */
    else
        f = (double)(long long)(x.nanos / 1000000) / 1000.0;  /* millicores -> cores, GPUs */
    char buf[64];
    snprintf(buf, sizeof buf, "%.3f", f);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf) - 1;
        while (end > dot && *end == '0')
            *end-- = '\0';
        if (end == dot)
            *end = '\0';
    }
    if (!strcmp(buf, "-0"))
        strcpy(buf, "0");
    return tly_arena_strdup(a, buf);
}

/* An exact decimal of x (Go's %v of the same value, for these amounts). */
static char *exact(tly_arena *a, tly_qty x)
{
    tly_i128 v = x.nanos < 0 ? -x.nanos : x.nanos;
    char frac[16];
    snprintf(frac, sizeof frac, "%09lld", (long long)(v % 1000000000));
    for (int k = 8; k >= 0 && frac[k] == '0'; k--)
        frac[k] = '\0';
    return tly_arena_printf(a, "%s%lld%s%s", x.nanos < 0 ? "-" : "", (long long)(v / 1000000000),
                            frac[0] ? "." : "", frac);
}

static const struct {
    const char *limit_name, *unit, *np_unit_req, *np_unit;
    int64_t div;
} dims[TLY_QR_COUNT] = {
    [TLY_QR_CPU] = {"CPU cores", "cores", "CPU cores", "cores", 1},
    [TLY_QR_MEMORY] = {"memory", "GB", "GB memory", "GB", 1000000000},
    [TLY_QR_GPU] = {"GPUs", "GPUs", "GPUs", "GPUs", 1},
};

/*
** A refused verdict's message is a function of its figures alone: the queue,
** which bound (limit, quota, AccountedResource), the resource, the usage shown,
** the bound and the request. A backlog repeats the same figures for every pod
** of a template that waits in one queue while nothing in it changes (31,000
** of the realistic cluster's 50,000 pending pods), and formatting each one
** anew was a tenth of the pod engine. The key is those figures, written
** field by field (no struct padding); a hit is the message made before,
** byte for byte, so no answer changes.
*/
typedef struct {
    char b[96];
    size_t n;
} msgkey;

static void key_put(msgkey *k, const void *p, size_t n)
{
    memcpy(k->b + k->n, p, n);
    k->n += n;
}

static void key_qty(msgkey *k, tly_qty q)
{
    key_put(k, &q.nanos, sizeof q.nanos);
    int f = (int)q.fmt;  /* tly_qty_format prints by it */
    key_put(k, &f, sizeof f);
}

static msgkey verdict_key(const tly_qverdict *v)
{
    msgkey k = {.n = 0};
    int b = (int)v->bound;
    key_put(&k, &v->queue, sizeof v->queue);
    key_put(&k, &b, sizeof b);
    key_put(&k, &v->dim, sizeof v->dim);
    key_qty(&k, v->used);
    key_qty(&k, v->bound_value);
    key_qty(&k, v->request);
    return k;
}

static char *memo_get(const tly_queues *qs, const msgkey *k)
{
    return tly_strmap_get(&qs->msgs, k->b, k->n);
}

static void memo_put(tly_queues *qs, const msgkey *k, char *message)
{
    char *key = tly_arena_alloc(qs->a, k->n);
    memcpy(key, k->b, k->n);
    tly_strmap_put(&qs->msgs, key, k->n, message);
}

static void over_limit(tly_queues *qs, const qnode *n, int r, tly_qty used, tly_qty req,
                       tly_qverdict *v)
{
    v->ok = false;
    v->reason = "OverLimit";
    if (v->quiet)
        return;
    msgkey k = verdict_key(v);
    if ((v->message = memo_get(qs, &k)))
        return;
    v->message = tly_arena_printf(
        qs->a,
        "%s quota has reached the allowable limit of %s. Limit is %s %s, currently %s %s allocated "
        "and workload requested %s %s",
        display(n), dims[r].limit_name, humanize(qs->a, n->bound[1][r], dims[r].div), dims[r].unit,
        humanize(qs->a, used, dims[r].div), dims[r].unit, humanize(qs->a, req, dims[r].div),
        dims[r].unit);
    memo_put(qs, &k, v->message);
}

static void over_quota(tly_queues *qs, const qnode *n, int r, tly_qty used, tly_qty req,
                       tly_qverdict *v)
{
    v->ok = false;
    v->reason = "NonPreemptibleOverQuota";
    if (v->quiet)
        return;
    msgkey k = verdict_key(v);
    if ((v->message = memo_get(qs, &k)))
        return;
    const char *requested = r == TLY_QR_GPU ? exact(qs->a, req) : humanize(qs->a, req, dims[r].div);
    v->message = tly_arena_printf(
        qs->a,
        "Non-preemptible workload is over quota. Workload requested %s %s, but %s quota is %s %s, "
        "while %s %s %s already allocated for non-preemptible pods. Use a preemptible workload to "
        "go over quota.",
        requested, dims[r].np_unit_req, display(n), humanize(qs->a, n->bound[0][r], dims[r].div),
        dims[r].np_unit, humanize(qs->a, used, dims[r].div), dims[r].np_unit,
        r == TLY_QR_GPU || r == TLY_QR_MEMORY ? "are" : "are");
    memo_put(qs, &k, v->message);
}

static bool exceeds(tly_qty used, tly_qty rsv, tly_qty req, tly_qty bound)
{
    tly_qty t;
    if (tly_qty_add(used, rsv, &t) != TLY_OK || tly_qty_add(t, req, &t) != TLY_OK)
        return true;
    return tly_qty_cmp(t, bound) > 0;
}

tly_qty tly_queues_accounted_limit(const tly_queues *qs, uint32_t q, uint32_t a)
{
    return qs->q[q].acc_limit[a];
}

bool tly_queues_accres_is_gpu_memory(const tly_queues *qs, uint32_t a)
{
    return qs->acc_gpu_memory[a];
}

void tly_queues_check(tly_queues *qs, uint32_t q, const tly_qcharge *c, bool non_preemptible,
                      bool reserved, tly_qverdict *v)
{
    v->ok = true;
    v->reason = NULL;
    v->message = NULL;
    /* 1. Limits, every workload: leaf to root, cpu, memory, gpu. */
    for (int32_t j = (int32_t)q; j >= 0; j = qs->q[j].parent) {
        const qnode *n = &qs->q[j];
        for (int r = 0; r < TLY_QR_COUNT; r++) {
            if (!n->bounded[1][r] || tly_qty_sign(c->res[r]) <= 0)
                continue;
            if (exceeds(n->used[r], reserved ? n->rsv[r] : ZERO, c->res[r], n->bound[1][r])) {
                tly_qty shown = n->used[r];
                if (reserved)
                    tly_qty_add(shown, n->rsv[r], &shown);
                v->queue = j;
                v->bound = TLY_QBOUND_LIMIT;
                v->dim = r;
                v->used = shown;
                v->bound_value = n->bound[1][r];
                v->request = c->res[r];
                over_limit(qs, n, r, shown, c->res[r], v);
                return;
            }
        }
    }
    /* 2. Quotas, non-preemptible workloads only, against allocatedNonPreemptible. */
    if (non_preemptible)
        for (int32_t j = (int32_t)q; j >= 0; j = qs->q[j].parent) {
            const qnode *n = &qs->q[j];
            for (int r = 0; r < TLY_QR_COUNT; r++) {
                if (!n->bounded[0][r] || tly_qty_sign(c->res[r]) <= 0)
                    continue;
                if (exceeds(n->used_np[r], reserved ? n->rsv_np[r] : ZERO, c->res[r], n->bound[0][r])) {
                    tly_qty shown = n->used_np[r];
                    if (reserved)
                        tly_qty_add(shown, n->rsv_np[r], &shown);
                    v->queue = j;
                    v->bound = TLY_QBOUND_QUOTA;
                    v->dim = r;
                    v->used = shown;
                    v->bound_value = n->bound[0][r];
                    v->request = c->res[r];
                    over_quota(qs, n, r, shown, c->res[r], v);
                    return;
                }
            }
        }
    /* 3. AccountedResource limits, every workload: leaf to root, name order. */
    uint32_t count = tly_qcharge_nacc(c, qs->nacc);
    for (int32_t j = (int32_t)q; count && j >= 0; j = qs->q[j].parent) {
        const qnode *n = &qs->q[j];
        for (uint32_t e = 0; e < count; e++) {
            tly_qty amount;
            uint32_t a = tly_qcharge_acc(c, e, &amount);
            if (tly_qty_sign(amount) <= 0)
                continue;
            tly_qty lim = tly_queues_accounted_limit(qs, (uint32_t)j, a);
            if (tly_qty_sign(lim) < 0)
                continue;  /* -1 (or any negative) is unlimited for AccountedResources */
            if (exceeds(n->acc_used[a], reserved ? n->acc_rsv[a] : ZERO, amount, lim)) {
                v->ok = false;
                v->reason = "OverLimit";
                tly_qty shown = n->acc_used[a];
                if (reserved)
                    tly_qty_add(shown, n->acc_rsv[a], &shown);
                v->queue = j;
                v->bound = TLY_QBOUND_ACCOUNTED;
                v->dim = (int)a;
                v->used = shown;
                v->bound_value = lim;
                v->request = amount;
                if (v->quiet)
                    return;
                msgkey k = verdict_key(v);
                if ((v->message = memo_get(qs, &k)))
                    return;
                char u[TLY_QTY_BUFSZ], r[TLY_QTY_BUFSZ], l[TLY_QTY_BUFSZ];
                tly_qty_format(shown, u, sizeof u);
                tly_qty_format(amount, r, sizeof r);
                tly_qty_format(lim, l, sizeof l);
                v->ok = false;
                v->reason = "OverLimit";
                v->message = tly_arena_printf(
                    qs->a,
                    "%s has reached the limit of AccountedResource %s. Limit is %s, currently %s "
                    "used and workload requested %s",
                    display(n), qs->acc[a]->meta.name, l, u, r);
                memo_put(qs, &k, v->message);
                return;
            }
        }
    }
}

static void add_to(tly_qty *x, tly_qty d, int sign)
{
    tly_qty r;
    if ((sign > 0 ? tly_qty_add(*x, d, &r) : tly_qty_sub(*x, d, &r)) == TLY_OK)
        *x = r;
}

void tly_queues_charge(tly_queues *qs, uint32_t q, const tly_qcharge *c, bool non_preemptible,
                       int sign)
{
    for (int32_t j = (int32_t)q; j >= 0; j = qs->q[j].parent) {
        qnode *n = &qs->q[j];
        for (int r = 0; r < TLY_QR_COUNT; r++) {
            add_to(&n->used[r], c->res[r], sign);
            if (non_preemptible)
                add_to(&n->used_np[r], c->res[r], sign);
        }
        if (sign > 0) {
            tly_rvec_add_list(&n->alloc, &c->all);
            if (non_preemptible)
                tly_rvec_add_list(&n->alloc_np, &c->all);
        } else {
            tly_rvec_sub_list(&n->alloc, &c->all);
            if (non_preemptible)
                tly_rvec_sub_list(&n->alloc_np, &c->all);
        }
        for (uint32_t e = 0; e < tly_qcharge_nacc(c, qs->nacc); e++) {
            tly_qty amount;
            uint32_t a = tly_qcharge_acc(c, e, &amount);
            add_to(&n->acc_used[a], amount, sign);
        }
    }
}

void tly_queues_reserve(tly_queues *qs, uint32_t q, const tly_qcharge *c, bool non_preemptible)
{
    for (int32_t j = (int32_t)q; j >= 0; j = qs->q[j].parent) {
        qnode *n = &qs->q[j];
        for (int r = 0; r < TLY_QR_COUNT; r++) {
            add_to(&n->rsv[r], c->res[r], 1);
            if (non_preemptible)
                add_to(&n->rsv_np[r], c->res[r], 1);
        }
        for (uint32_t e = 0; e < tly_qcharge_nacc(c, qs->nacc); e++) {
            tly_qty amount;
            uint32_t a = tly_qcharge_acc(c, e, &amount);
            add_to(&n->acc_rsv[a], amount, 1);
        }
    }
}

tly_gating_mode tly_gating_mode_parse(const char *s)
{
    if (!s)
        return TLY_GATING_UNSET;
    if (!strcmp(s, "all"))
        return TLY_GATING_ALL;
    if (!strcmp(s, "opt-in"))
        return TLY_GATING_OPT_IN;
    if (!strcmp(s, "off"))
        return TLY_GATING_OFF;
    return TLY_GATING_UNSET;
}

const char *tly_gating_mode_name(tly_gating_mode m)
{
    return m == TLY_GATING_OPT_IN ? "opt-in" : m == TLY_GATING_OFF ? "off" : "all";
}

tly_gating_mode tly_gating_mode_of(const tly_store *s)
{
    tly_gating_mode flag = tly_store_gating_mode(s);
    if (flag != TLY_GATING_UNSET)
        return flag;
    const tly_config *cfg = tly_store_config(s);
    return cfg && cfg->gating_enabled == 0 ? TLY_GATING_OFF : TLY_GATING_ALL;
}

bool tly_queue_gated(tly_gating_mode m, const tly_queue *q)
{
    const char *label = tly_kvs_get(&q->meta.labels, "kai.scheduler/queue-admission-gating");
    switch (m) {
    case TLY_GATING_OFF:
        return false;
    case TLY_GATING_OPT_IN:
        return (label && !strcmp(label, "true")) || q->admission_gating == 1;
    default:
        return !((label && !strcmp(label, "false")) || q->admission_gating == 0);
    }
}

bool tly_queues_gating(const tly_queues *qs, uint32_t q) { return tly_queue_gated(qs->gating, qs->q[q].q); }

const tly_rvec *tly_queues_allocated(const tly_queues *qs, uint32_t q) { return &qs->q[q].alloc; }
const tly_rvec *tly_queues_allocated_np(const tly_queues *qs, uint32_t q) { return &qs->q[q].alloc_np; }

tly_qty tly_queues_accounted_used(const tly_queues *qs, uint32_t q, uint32_t a)
{
    return qs->q[q].acc_used[a];
}

const char *tly_queues_missing_ref(const tly_queues *qs, uint32_t q) { return qs->q[q].missing_ref; }

bool tly_queues_bound(const tly_queues *qs, uint32_t q, bool limit, int r, tly_qty *out)
{
    const qnode *n = &qs->q[q];
    if (!n->bounded[limit][r])
        return false;
    *out = n->bound[limit][r];
    return true;
}

tly_qty tly_queues_used(const tly_queues *qs, uint32_t q, int r, bool non_preemptible)
{
    return non_preemptible ? qs->q[q].used_np[r] : qs->q[q].used[r];
}

bool tly_queues_has_resources(const tly_queues *qs, uint32_t q) { return qs->q[q].q->has_resources; }
