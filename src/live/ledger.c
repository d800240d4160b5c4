/*
** ledger.c: the rows of the live ledger (ledger.h).
**
** A row changes by one pod's charge at a time. Quantities are exact
** (nano-units, 128 bits), so adding a charge and later subtracting the same
** charge returns a row to exactly what it held: the incremental sums equal
** sums made from scratch, which tly_live_check() verifies. A row whose pods
** are all gone is removed, so the map holds the queues pods name now.
*/
#include "ledger.h"

#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"

void tly_contrib_free(tly_contrib *c)
{
    free(c->block);
    memset(c, 0, sizeof *c);
}

static int cmp_lacc(const void *a, const void *b)
{
    return strcmp(((const tly_lacc *)a)->ar, ((const tly_lacc *)b)->ar);
}

void tly_contrib_from(tly_contrib *c, const tly_pod_charge *ch, const tly_queues *qs)
{
    /* One block: the lists, then the queue name and the AccountedResource names. */
    memset(c, 0, sizeof *c);
    size_t strs = strlen(ch->queue) + 1;
    for (uint32_t i = 0; i < ch->nacc; i++)
        strs += strlen(tly_queues_accres(qs, ch->acc[i].ar)->meta.name) + 1;
    size_t lists = ch->all.n * sizeof *c->all + ch->nacc * sizeof *c->acc;
    char *b = tly_xmalloc(lists + strs);
    c->block = b;
    c->all = (tly_rq *)b;
    c->acc = (tly_lacc *)(b + ch->all.n * sizeof *c->all);
    char *sp = b + lists;
    c->queue = strcpy(sp, ch->queue);
    sp += strlen(sp) + 1;
    c->np = ch->non_preemptible;
    memcpy(c->res, ch->res, sizeof c->res);
    c->nall = ch->all.n;
    if (c->nall)
        memcpy(c->all, ch->all.v, c->nall * sizeof *c->all);
    c->nacc = ch->nacc;
    for (uint32_t i = 0; i < ch->nacc; i++) {
        c->acc[i].ar = strcpy(sp, tly_queues_accres(qs, ch->acc[i].ar)->meta.name);
        sp += strlen(sp) + 1;
        c->acc[i].q = ch->acc[i].q;
    }
    qsort(c->acc, c->nacc, sizeof *c->acc, cmp_lacc);
}

bool tly_contrib_equal(const tly_contrib *a, const tly_contrib *b)
{
    if (strcmp(a->queue, b->queue) || a->np != b->np || a->nall != b->nall || a->nacc != b->nacc)
        return false;
    for (int r = 0; r < TLY_QR_COUNT; r++)
        if (tly_qty_cmp(a->res[r], b->res[r]))
            return false;
    for (uint32_t i = 0; i < a->nall; i++)
        if (a->all[i].id != b->all[i].id || tly_qty_cmp(a->all[i].q, b->all[i].q))
            return false;
    for (uint32_t i = 0; i < a->nacc; i++)
        if (strcmp(a->acc[i].ar, b->acc[i].ar) || tly_qty_cmp(a->acc[i].q, b->acc[i].q))
            return false;
    return true;
}

/* ---- rows --------------------------------------------------------------------- */

void tly_qrow_free(void *p, void *ctx)
{
    (void)ctx;
    tly_qrow *r = p;
    tly_rvec_free(&r->all);
    tly_rvec_free(&r->all_np);
    for (uint32_t i = 0; i < r->nacc; i++)
        free(r->acc[i].ar);
    free(r->acc);
    free(r);
}

static void rvec_copy(tly_rvec *dst, const tly_rvec *src)
{
    tly_rvec_init(dst);
    for (uint32_t id = 0; id < src->n; id++)
        if (!tly_qty_is_zero(src->v[id]))
            tly_rvec_set(dst, id, src->v[id]);
}

static tly_qrow *row_copy(const tly_qrow *r, uint64_t born)
{
    tly_qrow *c = tly_xcalloc(1, sizeof *c);
    c->born = born;
    if (!r) {
        tly_rvec_init(&c->all);
        tly_rvec_init(&c->all_np);
        return c;
    }
    c->npods = r->npods;
    memcpy(c->res, r->res, sizeof c->res);
    memcpy(c->res_np, r->res_np, sizeof c->res_np);
    rvec_copy(&c->all, &r->all);
    rvec_copy(&c->all_np, &r->all_np);
    c->nacc = r->nacc;
    c->acc = tly_xmalloc((c->nacc + 1) * sizeof *c->acc);
    for (uint32_t i = 0; i < r->nacc; i++) {
        c->acc[i].ar = tly_xstrdup(r->acc[i].ar);
        c->acc[i].q = r->acc[i].q;
    }
    return c;
}

static void qty_step(tly_qty *dst, tly_qty q, int sign)
{
    if (sign > 0)
        tly_qty_add(*dst, q, dst);
    else
        tly_qty_sub(*dst, q, dst);
}

static void rvec_step(tly_rvec *v, const tly_rq *l, uint32_t n, int sign)
{
    tly_rlist list = {(tly_rq *)l, n};
    if (sign > 0)
        tly_rvec_add_list(v, &list);
    else
        tly_rvec_sub_list(v, &list);
}

/* The row's entry for AccountedResource `ar`, inserted (zero) when absent. */
static tly_lacc *acc_slot(tly_qrow *r, const char *ar)
{
    uint32_t lo = 0, hi = r->nacc;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->acc[mid].ar, ar);
        if (!c)
            return &r->acc[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    r->acc = tly_xrealloc(r->acc, (r->nacc + 1) * sizeof *r->acc);
    memmove(r->acc + lo + 1, r->acc + lo, (r->nacc - lo) * sizeof *r->acc);
    r->acc[lo].ar = tly_xstrdup(ar);
    r->acc[lo].q = (tly_qty){0, TLY_QFMT_DECIMAL_SI};
    r->nacc++;
    return &r->acc[lo];
}

static void drop_zero_acc(tly_qrow *r)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < r->nacc; i++) {
        if (tly_qty_is_zero(r->acc[i].q))
            free(r->acc[i].ar);
        else
            r->acc[k++] = r->acc[i];
    }
    r->nacc = k;
}

bool tly_qrow_empty(const tly_qrow *r)
{
    if (r->npods || r->nacc)
        return false;
    for (int i = 0; i < TLY_QR_COUNT; i++)
        if (!tly_qty_is_zero(r->res[i]) || !tly_qty_is_zero(r->res_np[i]))
            return false;
    for (uint32_t id = 0; id < r->all.n; id++)
        if (!tly_qty_is_zero(r->all.v[id]))
            return false;
    for (uint32_t id = 0; id < r->all_np.n; id++)
        if (!tly_qty_is_zero(r->all_np.v[id]))
            return false;
    return true;
}

tly_ptree *tly_ledger_apply(tly_epochs *e, tly_ptree *rows, const tly_contrib *c, int sign)
{
    tly_qrow *old = tly_ptree_get(rows, c->queue), *r = old;
    if (!r || r->born < tly_epochs_cur(e))
        r = row_copy(old, tly_epochs_cur(e));
    if (sign > 0)
        r->npods++;
    else if (r->npods)
        r->npods--;
    for (int i = 0; i < TLY_QR_COUNT; i++) {
        qty_step(&r->res[i], c->res[i], sign);
        if (c->np)
            qty_step(&r->res_np[i], c->res[i], sign);
    }
    rvec_step(&r->all, c->all, c->nall, sign);
    if (c->np)
        rvec_step(&r->all_np, c->all, c->nall, sign);
    for (uint32_t i = 0; i < c->nacc; i++)
        qty_step(&acc_slot(r, c->acc[i].ar)->q, c->acc[i].q, sign);
    drop_zero_acc(r);
    void *prev;
    if (tly_qrow_empty(r)) {
        rows = tly_ptree_del(e, rows, c->queue, &prev);
        if (r != old)
            tly_qrow_free(r, NULL);
    } else {
        rows = tly_ptree_put(e, rows, c->queue, r, &prev);
    }
    if (old && old != r)
        tly_epochs_retire(e, old, old->born, tly_qrow_free, NULL);
    else if (old && tly_qrow_empty(r) && r == old)
        tly_epochs_retire(e, old, old->born, tly_qrow_free, NULL);
    return rows;
}

static int free_row(void *ctx, const char *key, void *val)
{
    (void)key;
    tly_epochs *e = ctx;
    tly_qrow *r = val;
    tly_epochs_retire(e, r, r->born, tly_qrow_free, NULL);
    return 0;
}

void tly_ledger_free(tly_epochs *e, tly_ptree *rows)
{
    tly_ptree_each(rows, free_row, e);
    tly_ptree_free(e, rows);
}

static bool rvec_equal(const tly_rvec *a, const tly_rvec *b)
{
    uint32_t n = a->n > b->n ? a->n : b->n;
    for (uint32_t id = 0; id < n; id++)
        if (tly_qty_cmp(tly_rvec_get(a, id), tly_rvec_get(b, id)))
            return false;
    return true;
}

bool tly_qrow_equal(const tly_qrow *a, const tly_qrow *b)
{
    if (a->npods != b->npods || a->nacc != b->nacc)
        return false;
    for (int i = 0; i < TLY_QR_COUNT; i++)
        if (tly_qty_cmp(a->res[i], b->res[i]) || tly_qty_cmp(a->res_np[i], b->res_np[i]))
            return false;
    if (!rvec_equal(&a->all, &b->all) || !rvec_equal(&a->all_np, &b->all_np))
        return false;
    for (uint32_t i = 0; i < a->nacc; i++)
        if (strcmp(a->acc[i].ar, b->acc[i].ar) || tly_qty_cmp(a->acc[i].q, b->acc[i].q))
            return false;
    return true;
}

static int charge_row(void *ctx, const char *key, void *val)
{
    tly_queues *qs = ctx;
    const tly_qrow *r = val;
    int32_t q = tly_queues_find(qs, key);
    if (q < 0)
        return 0;
    /* The resize ledger: cpu and memory, all pods; the non-preemptible part again as such. */
    tly_qcharge all, np;
    memset(&all, 0, sizeof all);
    memset(&np, 0, sizeof np);
    for (int i = TLY_QR_CPU; i <= TLY_QR_MEMORY; i++) {
        tly_qty_sub(r->res[i], r->res_np[i], &all.res[i]);
        np.res[i] = r->res_np[i];
    }
    tly_queues_charge(qs, (uint32_t)q, &all, false, 1);
    tly_queues_charge(qs, (uint32_t)q, &np, true, 1);
    return 0;
}

void tly_ledger_charge_queues(const tly_ptree *rows, tly_queues *qs)
{
    tly_ptree_each(rows, charge_row, qs);
}

/* rvec minus the ids of another, as a list in arena a. */
static tly_rlist rvec_list(const tly_rvec *v, const tly_rvec *minus, tly_arena *a)
{
    tly_rlist l = {tly_arena_alloc(a, (v->n + 1) * sizeof(tly_rq)), 0};
    for (uint32_t id = 0; id < v->n; id++) {
        tly_qty q = v->v[id];
        if (minus)
            tly_qty_sub(q, tly_rvec_get(minus, id), &q);
        if (!tly_qty_is_zero(q))
            l.v[l.n++] = (tly_rq){id, q};
    }
    return l;
}

static int charge_full(void *ctx, const char *key, void *val)
{
    tly_queues *qs = ctx;
    const tly_qrow *r = val;
    int32_t q = tly_queues_find(qs, key);
    if (q < 0)
        return 0;
    tly_arena *a = tly_arena_create(4096);
    uint32_t nacc = tly_queues_naccres(qs);
    tly_qcharge all, np;
    memset(&all, 0, sizeof all);
    memset(&np, 0, sizeof np);
    for (int i = 0; i < TLY_QR_COUNT; i++) {
        tly_qty_sub(r->res[i], r->res_np[i], &all.res[i]);
        np.res[i] = r->res_np[i];
    }
    all.all = rvec_list(&r->all, &r->all_np, a);
    np.all = rvec_list(&r->all_np, NULL, a);
    /* Accounted usage is one sum whatever the preemptibility: it goes with `all`. */
    tly_acc_charge *acc = tly_arena_alloc(a, (r->nacc + 1) * sizeof *acc);
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->nacc; i++)
        for (uint32_t k = 0; k < nacc; k++)
            if (!strcmp(tly_queues_accres(qs, k)->meta.name, r->acc[i].ar))
                acc[n++] = (tly_acc_charge){k, r->acc[i].q};
    all.acc_list = acc;
    all.nacc_list = n;
    tly_queues_charge(qs, (uint32_t)q, &all, false, 1);
    tly_queues_charge(qs, (uint32_t)q, &np, true, 1);
    tly_arena_destroy(a);
    return 0;
}

void tly_ledger_charge_full(const tly_ptree *rows, tly_queues *qs)
{
    tly_ptree_each(rows, charge_full, qs);
}
