/*
** upsizes.c: /validate/pods-resize with upsize reservations shared by every
** replica (resv.h tly_resv_upsize_review).
**
** Each attempt of the transaction rebuilds upsize.h's ledger from the
** table's "upsizes" entry, drops what the decision's state shows settled
** (upsize.h: by resourceVersion, so a lagging state keeps a hold), decides
** the review with that ledger exactly as one replica does with its own,
** and asks for a write when the decision added or changed a hold. The
** ledger's clock is the wall clock, so a hold's age means the same on every
** replica.
*/
#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"
#include "tally/error.h"
#include "tally/node.h"
#include "tally/resv.h"
#include "tally/upsize.h"

typedef struct {
    tly_resv *r;
    int64_t timeout_ms;
    const tly_store *state;
    const char *body;
    size_t len;
    tly_admit_result res;
    bool decided;
    int rc;              /* of the decision itself (TLY_EINVAL: a bad review) */
    char *err;
    size_t errlen;
} txn;

typedef struct {
    char **v;
    size_t n, cap;
} lines;

static void add_line(void *ctx, const char *ns, const char *name, const char *value)
{
    (void)ns;
    (void)name;
    lines *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = tly_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = tly_xstrdup(value);
}

static int cmp_line(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The ledger as the entry's text: a JSON array, one reservation per line, sorted (by namespace, name). */
static char *text_of(tly_upsize *u)
{
    lines l = {0};
    tly_upsize_each(u, add_line, &l);
    if (!l.n) {
        free(l.v);
        return tly_xstrdup("");
    }
    qsort(l.v, l.n, sizeof *l.v, cmp_line);
    size_t len = 3;
    for (size_t i = 0; i < l.n; i++)
        len += strlen(l.v[i]) + 2;
    char *out = tly_xmalloc(len + 1), *p = out;
    *p++ = '[';
    for (size_t i = 0; i < l.n; i++) {
        p += sprintf(p, "\n%s%s", l.v[i], i + 1 < l.n ? "," : "");
        free(l.v[i]);
    }
    strcpy(p, "\n]");
    free(l.v);
    return out;
}

/* The ledger from the entry's text; an entry that does not read is dropped (the next write forgets it). */
static tly_upsize *ledger_of(const char *text, int64_t timeout_ms)
{
    tly_upsize *u = tly_upsize_create(timeout_ms, tly_upsize_wall_ms, NULL);
    if (!*text)
        return u;
    tly_arena *a = tly_arena_create(strlen(text) + 1024);
    const tly_node *arr = tly_parse_value(text, strlen(text), a);
    char err[256];
    for (uint32_t i = 0; arr && arr->type == TLY_N_SEQ && i < arr->nkids; i++)
        (void)tly_upsize_decode(u, tly_node_at(arr, i), err, sizeof err);
    tly_arena_destroy(a);
    return u;
}

static int step(void *ctx, const char *text, bool fresh, char **out)
{
    txn *t = ctx;
    if (t->decided)
        tly_admit_result_free(&t->res);
    t->decided = false;
    tly_upsize *u = ledger_of(text, t->timeout_ms);
    tly_upsize_reconcile(u, t->state, NULL);
    char *before = text_of(u);
    t->rc = tly_admit_review_ledger(t->state, tly_upsize_ledger(u), t->body, t->len, &t->res, t->err,
                                    t->errlen);
    int s = TLY_RESV_DONE;
    if (t->rc == TLY_OK) {
        t->decided = true;
        char *after = text_of(u);
        if (!t->res.allowed && !fresh && *before) {
            s = TLY_RESV_FRESH;  /* denied with holds from a copy that may be stale: once more, fresh */
        } else if (strcmp(before, after) != 0) {
            s = TLY_RESV_WRITE;
            *out = after;
            after = NULL;
        }
        free(after);
    }
    free(before);
    tly_upsize_destroy(u);
    return s;
}

static void deny(tly_admit_result *res, const char *why)
{
    res->allowed = false;
    free(res->message);
    res->message = tly_xasprintf("tally could not record the reservation this upsize needs, so it is not "
                                 "admitted: %s; retry the resize", why);
}

int tly_resv_upsize_review(tly_resv *r, const tly_store *state, const char *body, size_t len,
                           tly_admit_result *res, char *err, size_t errlen)
{
    txn t = {.r = r, .timeout_ms = tly_resv_upsize_timeout(r), .state = state, .body = body, .len = len,
             .err = err, .errlen = errlen};
    char why[512];
    int rc = tly_resv_run(r, "upsizes", step, &t, why, sizeof why);
    if (!t.decided && rc != TLY_OK) {
        /* The table could not be read: decide without it only to answer the review, as a denial. */
        char *unused = NULL;
        step(&t, "", true, &unused);
        free(unused);
    }
    if (!t.decided)
        return t.rc;
    *res = t.res;
    if (rc != TLY_OK && res->allowed)
        deny(res, why);
    return TLY_OK;
}
