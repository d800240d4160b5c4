/*
** report.c: the self-contained HTML page of `tally simulate -o html`
** (report.h, docs/report.md).
**
** The page is written top to bottom in one pass per section, from the
** engines' results only; nothing on it depends on the time of writing, the
** environment or memory addresses, so the same input gives the same bytes.
** Percentages are integers computed from the exact quantities (floor of
** used * 100 / limit); the "at or over 90%" and "over 100%" flags compare the
** exact values, not a rounded percentage.
*/
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/kruntimes.h"
#include "tally/queues.h"
#include "tally/report.h"

#define GPU_PRODUCT_LABEL "nvidia.com/gpu.product"
#define MAX_TREE_DEPTH 32

/* ---- small writers ------------------------------------------------------ */

void tly_html_escape(FILE *out, const char *s)
{
    if (!s)
        return;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        case '\n':
        case '\t': fputc(*p, out); break;
        default:
            /* Other control bytes have no business on the page. */
            if (*p >= 0x20 && *p != 0x7f)
                fputc(*p, out);
        }
    }
}

static void esc(FILE *out, const char *s)
{
    tly_html_escape(out, s);
}

static void qty(FILE *out, tly_qty q)
{
    char buf[TLY_QTY_BUFSZ];
    tly_qty_format(q, buf, sizeof buf);
    esc(out, buf);
}

/* q for people (tly_qty_human), escaped. */
static void hq(FILE *out, tly_qty q, tly_human_unit unit)
{
    char buf[TLY_QTY_BUFSZ];
    esc(out, tly_qty_human(q, unit, buf));
}

/* How a queue column's amounts read: cpu in cores, memory in bytes, gpu in devices. */
static tly_human_unit unit_of(const char *kind, const char *resource)
{
    if (strcmp(kind, "spec") != 0)  /* the reserved gpu-memory AccountedResource charges bytes */
        return !strcmp(resource, "gpu-memory") ? TLY_HUMAN_BYTES : TLY_HUMAN_NUMBER;
    return !strcmp(resource, "cpu") ? TLY_HUMAN_CORES : !strcmp(resource, "memory") ? TLY_HUMAN_BYTES
                                                                                    : TLY_HUMAN_DEVICES;
}

/* "ns/name" escaped. */
static void nsname(FILE *out, const tly_meta *m)
{
    if (m->ns) {
        esc(out, m->ns);
        fputc('/', out);
    }
    esc(out, m->name);
}

/* "1 pod" / "2 pods". */
static void count_noun(FILE *out, uint32_t n, const char *one, const char *many)
{
    fprintf(out, "%u %s", n, n == 1 ? one : many);
}

/*
** floor(used * 100 / limit) for limit > 0, clamped to [0, 99999]. Values so
** large that used * 100 would not fit in 128 bits (beyond 10^27 units) are
** scaled down first, which only matters for absurd inputs.
*/
static int pct_of(tly_qty used, tly_qty limit)
{
    tly_i128 u = used.nanos, l = limit.nanos;
    if (u <= 0)
        return 0;
    if (l <= 0)
        return 99999;
    while (u > TLY_QTY_MAX_NANOS / 100) {
        u >>= 1;
        l >>= 1;
    }
    if (l == 0)
        return 99999;
    tly_i128 p = u * 100 / l;
    return p > 99999 ? 99999 : (int)p;
}

/* Bar and cell classes: "ok" below 90%, "hi" from 90% up to the limit, "over" past it. */
static const char *level_of(tly_qty used, tly_qty limit, int pct)
{
    if (tly_qty_cmp(used, limit) > 0)
        return "over";
    if (tly_qty_sign(limit) == 0 || pct >= 90)
        return "hi";
    return "ok";
}

/* Captures one explain text into a <details> block. */
static void explain_block(FILE *out, tly_podsched *ps, tly_runsched *rs, uint32_t i)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        fputs("<p class=\"muted\">explain text unavailable (out of memory)</p>\n", out);
        return;
    }
    if (ps)
        tly_podsched_explain(ps, i, f);
    else
        tly_runsched_explain(rs, i, f);
    fclose(f);
    if (buf && len) {
        fputs("<details><summary>Why: explain</summary><pre>", out);
        esc(out, buf);
        fputs("</pre></details>\n", out);
    }
    free(buf);
}

/* ---- the page's frame ----------------------------------------------------- */

static const char CSS[] =
    ":root{--ink:#1d2330;--muted:#6b7385;--line:#dfe3ea;--bg:#f6f7f9;--ok:#3d7fd6;"
    "--hi:#e49b0f;--over:#d2372b;--track:#e7eaf0}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:var(--bg);color:var(--ink);"
    "font:14px/1.45 \"DejaVu Sans\",\"Segoe UI\",Helvetica,Arial,sans-serif}\n"
    "header{background:#1f2a3c;color:#fff;padding:14px 24px 12px}\n"
    "header h1{margin:0 0 4px;font-size:20px;font-weight:600;word-break:break-all}\n"
    "header .meta{color:#c8d0de;font-size:13px}\n"
    "header .counts{margin-top:8px;display:flex;flex-wrap:wrap;gap:6px 18px}\n"
    ".cg{white-space:nowrap;font-size:13px;color:#c8d0de}\n"
    ".cg>b{color:#fff;margin-right:4px}\n"
    ".chip{display:inline-block;padding:1px 8px;border-radius:10px;background:#34425a;"
    "color:#fff;font-size:12px;white-space:nowrap;margin-left:3px}\n"
    ".chip b{font-weight:600}\n"
    "nav{padding:6px 24px;background:#fff;border-bottom:1px solid var(--line);font-size:13px}\n"
    "nav a{margin-right:18px;color:#2457a5;text-decoration:none}\n"
    "main{padding:8px 24px 32px;max-width:1800px}\n"
    "section{background:#fff;border:1px solid var(--line);border-radius:6px;padding:10px 16px 14px;"
    "margin:14px 0}\n"
    "h2{font-size:17px;margin:2px 0 8px}\n"
    "h3{font-size:14px;margin:14px 0 6px;font-weight:600}\n"
    ".muted{color:var(--muted)}\n"
    ".legend{font-size:12px;color:var(--muted);margin:0 0 8px}\n"
    ".legend span.sw{display:inline-block;width:22px;height:9px;border-radius:2px;margin:0 4px 0 10px;"
    "vertical-align:middle}\n"
    "table{border-collapse:collapse;width:100%}\n"
    "th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}\n"
    "th{font-size:12px;color:var(--muted);font-weight:600;white-space:nowrap}\n"
    "th.grp{text-align:center;border-bottom:2px solid var(--line)}\n"
    "table.queues{table-layout:fixed}\n"
    "label.fold{cursor:pointer;margin-right:4px}\n"
    "label.fold input{appearance:none;margin:0;width:0;height:0}\n"
    "label.fold::before{content:'\\25BE';color:var(--muted)}\n"
    "label.fold:has(input:checked)::before{content:'\\25B8'}\n"
    "tbody.tree:has(input.fold:checked)>tr:not([data-depth=\"0\"]){display:none}\n"
    "table.queues col.qn{width:190px}\n"
    "table.queues col.gp{width:150px}\n"
    /* A queue name wraps in its fixed-width column, anywhere if it has no hyphen: a cut name
       ("department-numb...") cannot be told from its siblings (docs/report.md). */
    "td.qname{font-weight:600;white-space:normal;overflow-wrap:anywhere}\n"
    "td.qname .tw{color:var(--muted);font-weight:400}\n"
    ".dn{display:block;font-weight:400;font-size:12px;color:var(--muted)}\n"
    ".badge{display:inline-block;font-size:11px;font-weight:600;padding:0 6px;border-radius:8px;"
    "background:#fde2df;color:#8c1c13;margin-left:4px;white-space:normal}\n"
    ".bar{position:relative;height:10px;background:var(--track);border-radius:3px;overflow:hidden;"
    "margin:3px 0 2px}\n"
    ".bar>span{position:absolute;left:0;top:0;bottom:0;background:var(--ok)}\n"
    ".bar.hi>span{background:var(--hi)}\n"
    ".bar.over>span{background:var(--over)}\n"
    ".bar.over{outline:2px solid var(--over)}\n"
    ".bar>i{position:absolute;top:0;bottom:0;width:2px;background:#1d2330;opacity:.55}\n"
    ".num{font-size:12px;overflow-wrap:anywhere}\n"
    ".num b{white-space:nowrap}\n"
    ".qt{font-size:11px;color:var(--muted)}\n"
    ".num b{font-weight:600}\n"
    ".num.hi b{color:#a86c00}\n"
    ".num.over b{color:var(--over)}\n"
    ".nolimit{font-size:12px;color:var(--muted)}\n"
    ".gpu{display:inline-block;font-size:12px;background:#e8f0e0;color:#2f5a12;border-radius:8px;"
    "padding:0 6px;margin:1px 2px 1px 0;white-space:nowrap}\n"
    ".group{border-left:4px solid var(--line);padding:0 0 0 12px;margin:10px 0}\n"
    ".group.Gated{border-left-color:var(--hi)}\n"
    ".group.Unschedulable{border-left-color:var(--over)}\n"
    ".group.Invalid{border-left-color:#8a4fbf}\n"
    ".group.Pending,.group.Scheduled{border-left-color:var(--hi)}\n"
    ".group.Failed{border-left-color:var(--over)}\n"
    ".state{font-size:12px;font-weight:600;padding:1px 7px;border-radius:8px;background:#e7eaf0;"
    "margin-right:6px}\n"
    ".state.Gated{background:#fff0d4;color:#7a4d00}\n"
    ".state.Unschedulable,.state.Failed{background:#fde2df;color:#8c1c13}\n"
    ".state.Invalid{background:#efe3fa;color:#54257f}\n"
    ".state.Pending,.state.Scheduled{background:#fff0d4;color:#7a4d00}\n"
    "ul.items{list-style:none;margin:0;padding:0}\n"
    "li.item{padding:6px 0;border-bottom:1px dashed var(--line)}\n"
    "li.item:last-child{border-bottom:0}\n"
    ".who{font-family:\"DejaVu Sans Mono\",Menlo,Consolas,monospace;font-size:13px;font-weight:600}\n"
    ".msg{margin:2px 0 2px;max-width:1150px}\n"
    "details summary{cursor:pointer;color:#2457a5;font-size:12px}\n"
    "pre{background:#f3f4f7;border:1px solid var(--line);border-radius:4px;padding:8px 10px;"
    "margin:4px 0;font:12px/1.4 \"DejaVu Sans Mono\",Menlo,Consolas,monospace;white-space:pre-wrap;"
    "overflow-wrap:anywhere;max-width:1250px}\n"
    "table.heat{width:auto;min-width:70%}\n"
    "table.heat td.cell,table.heat td.na{text-align:center;font-size:12px;white-space:nowrap;"
    "width:120px;border:1px solid #fff}\n"
    "table.heat td.cell small{display:block;font-size:11px;opacity:.8}\n"
    "table.heat td.na{color:#b3b9c5}\n"
    "table.heat tr.unavailable td.pod{color:var(--muted)}\n"
    "td.pod{white-space:nowrap}\n"
    ".h0{background:#f4f8fd}.h1{background:#e3edf9}.h2{background:#cfe0f5}.h3{background:#b6d0ef}"
    ".h4{background:#9bbfe8}.h5{background:#7eaae0}.h6{background:#5f93d6;color:#fff}"
    ".h7{background:#467fc9;color:#fff}.h8{background:#336bb5;color:#fff}"
    ".h9{background:#235799;color:#fff}.h10{background:#17407a;color:#fff}"
    ".hx{background:var(--over);color:#fff}\n";

static const char *const POD_STATES[] = {"Running", "Bound", "Gated", "Unschedulable",
                                         "Invalid", "Succeeded", "Failed"};
#define NPOD_STATES (sizeof POD_STATES / sizeof POD_STATES[0])

static void write_header(FILE *out, tly_store *s, tly_podsched *ps, tly_runsched *rs,
                         const char *title, int64_t now, bool have_clock)
{
    fputs("<header>\n<h1>", out);
    esc(out, title);
    fputs("</h1>\n<div class=\"meta\">Clock: ", out);
    if (have_clock && now != TLY_NO_TIME) {
        time_t t = (time_t)now;
        struct tm tm;
        char buf[64];
        if (gmtime_r(&t, &tm) && strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
            fprintf(out, "<time id=\"clock\">%s</time>", buf);
        else
            fprintf(out, "<time id=\"clock\">%lld s</time>", (long long)now);
    } else {
        fputs("<span id=\"clock\">none (the input holds no time; heartbeats count as fresh)</span>",
              out);
    }
    fputs(" &middot; written by tally simulate -o html</div>\n<div class=\"counts\">", out);

    uint32_t np = tly_podsched_npods(ps), by_state[NPOD_STATES + 1] = {0};
    for (uint32_t i = 0; i < np; i++) {
        const char *st = tly_podsched_pod(ps, i)->state;
        size_t k = 0;
        while (k < NPOD_STATES && strcmp(st ? st : "", POD_STATES[k]))
            k++;
        by_state[k]++;
    }
    uint32_t nr = tly_runsched_nruns(rs), nrp = tly_runsched_npods(rs), navail = 0;
    uint32_t by_phase[TLY_RUN_CANCELLED + 1] = {0};
    for (uint32_t i = 0; i < nr; i++) {
        tly_run_phase ph = tly_runsched_run_at(rs, i)->phase;
        if ((unsigned)ph <= TLY_RUN_CANCELLED)
            by_phase[ph]++;
    }
    for (uint32_t i = 0; i < nrp; i++)
        if (tly_runsched_pod_at(rs, i)->state == TLY_RPOD_AVAILABLE)
            navail++;

    fprintf(out, "<span class=\"cg\" id=\"count-nodes\"><b>%u</b>nodes</span>",
            tly_store_count(s, TLY_K_NODE));
    fprintf(out, "<span class=\"cg\" id=\"count-queues\"><b>%u</b>queues</span>",
            tly_queues_count(tly_podsched_queues(ps)));
    fprintf(out, "<span class=\"cg\" id=\"count-pods\"><b>%u</b>pods", np);
    for (size_t k = 0; k < NPOD_STATES; k++)
        if (by_state[k])
            fprintf(out, "<span class=\"chip\">%s <b>%u</b></span>", POD_STATES[k], by_state[k]);
    if (by_state[NPOD_STATES])
        fprintf(out, "<span class=\"chip\">other <b>%u</b></span>", by_state[NPOD_STATES]);
    fprintf(out, "</span><span class=\"cg\" id=\"count-runs\"><b>%u</b>Runs", nr);
    for (int k = 0; k <= TLY_RUN_CANCELLED; k++)
        if (by_phase[k])
            fprintf(out, "<span class=\"chip\">%s <b>%u</b></span>",
                    tly_run_phase_name((tly_run_phase)k), by_phase[k]);
    fprintf(out, "</span><span class=\"cg\" id=\"count-runtime-pods\"><b>%u</b>Runtime Pods"
                 "<span class=\"chip\">available <b>%u</b></span></span>",
            nrp, navail);
    fputs("</div>\n</header>\n", out);
    fputs("<nav><a href=\"#queues\">Queues</a><a href=\"#pending\">Pods not placed</a>"
          "<a href=\"#runtime\">Runtime Pods</a><a href=\"#runs\">Runs waiting</a></nav>\n",
          out);
}

/* ---- the queue tree --------------------------------------------------------- */

typedef struct {
    tly_store *s;
    tly_podsched *ps;
    tly_queues *qs;
    uint32_t nq;
    bool *ar_col;            /* per AccountedResource: has a column (a finite limit somewhere) */
    const char **products;   /* distinct gpu.product values, sorted */
    uint32_t nproducts;
    uint32_t *pcount;        /* [q * nproducts + p]: Running/Bound pods of q's subtree on p */
    bool *shown;
} qctx;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *pod_product(tly_store *s, const tly_ps_result *r)
{
    if (!r->node || !r->state || (strcmp(r->state, "Running") && strcmp(r->state, "Bound")))
        return NULL;
    const tly_k8s_node *n = tly_store_find(s, TLY_K_NODE, NULL, r->node);
    return n ? tly_kvs_get(&n->meta.labels, GPU_PRODUCT_LABEL) : NULL;
}

/* Counts, per queue subtree, the Running/Bound pods on each GPU product. */
static void count_products(qctx *c)
{
    uint32_t np = tly_podsched_npods(c->ps), n = 0;
    const char **all = np ? malloc(np * sizeof *all) : NULL;
    for (uint32_t i = 0; all && i < np; i++) {
        const char *prod = pod_product(c->s, tly_podsched_pod(c->ps, i));
        if (prod)
            all[n++] = prod;
    }
    if (n)
        qsort(all, n, sizeof *all, cmp_str);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (k == 0 || strcmp(all[k - 1], all[i]))
            all[k++] = all[i];
    c->products = all;
    c->nproducts = k;
    c->pcount = (k && c->nq) ? calloc((size_t)c->nq * k, sizeof *c->pcount) : NULL;
    if (!c->pcount) {
        c->nproducts = 0;
        return;
    }
    for (uint32_t i = 0; i < np; i++) {
        const tly_ps_result *r = tly_podsched_pod(c->ps, i);
        const char *prod = pod_product(c->s, r);
        if (!prod || !r->queue)
            continue;
        const char **hit = bsearch(&prod, all, k, sizeof *all, cmp_str);
        if (!hit)
            continue;
        uint32_t p = (uint32_t)(hit - all);
        int32_t q = tly_queues_find(c->qs, r->queue);
        for (uint32_t guard = 0; q >= 0 && guard <= c->nq; guard++) {
            c->pcount[(size_t)q * k + p]++;
            q = tly_queues_parent(c->qs, (uint32_t)q);
        }
    }
}

/* One bar cell: used of limit, with an optional quota tick. */
static void bar_cell(FILE *out, const char *queue, const char *resource, const char *kind,
                     tly_qty used, tly_qty limit, bool has_quota, tly_qty quota)
{
    int pct = tly_qty_sign(limit) > 0 ? pct_of(used, limit) : (tly_qty_sign(used) > 0 ? 99999 : 100);
    const char *lv = level_of(used, limit, pct);
    int width = pct > 100 ? 100 : pct;
    fprintf(out, "<td><div class=\"bar %s\" data-queue=\"", lv);
    esc(out, queue);
    fputs("\" data-resource=\"", out);
    esc(out, resource);
    fprintf(out, "\" data-kind=\"%s\" data-pct=\"%d\" title=\"", kind, pct);
    esc(out, resource);
    fputs(": ", out);
    qty(out, used);
    fputs(" used of limit ", out);
    qty(out, limit);
    if (has_quota) {
        fputs(", quota ", out);
        qty(out, quota);
    }
    fprintf(out, "\"><span style=\"width:%d%%\"></span>", width);
    tly_human_unit u = unit_of(kind, resource);
    if (has_quota && tly_qty_sign(limit) > 0 && tly_qty_cmp(quota, limit) < 0)
        fprintf(out, "<i style=\"left:%d%%\"></i>", pct_of(quota, limit));
    fprintf(out, "</div><div class=\"num %s\">", lv);
    hq(out, used, u);
    fputs(" / ", out);
    hq(out, limit, u);
    if (pct >= 99999)
        fputs(" <b>over</b>", out);
    else if (tly_qty_sign(limit) == 0)
        fputs(" <b>no room</b>", out);
    else
        fprintf(out, " <b>%d%%</b>", pct);
    fputs("</div>", out);
    if (has_quota) {
        fputs("<div class=\"qt\">quota ", out);
        hq(out, quota, u);
        fputs("</div>", out);
    }
    fputs("</td>", out);
}

static void unbounded_cell(FILE *out, tly_qty used, bool has_quota, tly_qty quota, tly_human_unit u)
{
    fputs("<td><div class=\"nolimit\">", out);
    if (tly_qty_sign(used) != 0) {
        hq(out, used, u);
        fputs(" used &middot; ", out);
    }
    fputs("no limit", out);
    if (has_quota) {
        fputs(" &middot; quota ", out);
        hq(out, quota, u);
    }
    fputs("</div></td>", out);
}

/* Whether queue q has a child queue (its subtree can fold). */
static bool has_children(const qctx *c, uint32_t q)
{
    for (uint32_t i = 0; i < c->nq; i++)
        if (tly_queues_parent(c->qs, i) == (int32_t)q)
            return true;
    return false;
}

static void queue_row(FILE *out, qctx *c, uint32_t q, int depth)
{
    const tly_queue *qu = tly_queues_queue(c->qs, q);
    const char *name = qu->meta.name;
    static const char *const dims[TLY_QR_COUNT] = {"cpu", "memory", "gpu"};
    c->shown[q] = true;
    fputs("<tr data-queue=\"", out);
    esc(out, name);
    fprintf(out, "\" data-depth=\"%d\"><td class=\"qname\" style=\"padding-left:%dpx\" title=\"",
            depth, 8 + (depth > 0 ? depth : 0) * 20);
    esc(out, name);
    fputs("\">", out);
    if (depth == 0 && has_children(c, q))
        fprintf(out, "<label class=\"fold\" title=\"fold or unfold this subtree\"><input type=\"checkbox\" "
                     "class=\"fold\"%s></label>",
                c->nq > 50 ? " checked" : "");
    if (depth > 0)
        fputs("<span class=\"tw\">&#9492;&nbsp;</span>", out);
    esc(out, name);
    const char *missing = tly_queues_missing_ref(c->qs, q);
    if (missing) {
        fputs("<span class=\"badge\">AccountedResourceNotFound: ", out);
        esc(out, missing);
        fputs("</span>", out);
    }
    if (depth < 0)
        fputs("<span class=\"badge\">parentQueue missing or in a cycle</span>", out);
    if (qu->display_name && *qu->display_name && strcmp(qu->display_name, name)) {
        fputs("<span class=\"dn\">", out);
        esc(out, qu->display_name);
        fputs("</span>", out);
    }
    fputs("</td>", out);
    for (int r = 0; r < TLY_QR_COUNT; r++) {
        tly_qty used = tly_queues_used(c->qs, q, r, false), limit, quota;
        bool has_quota = tly_queues_bound(c->qs, q, false, r, &quota);
        if (tly_queues_bound(c->qs, q, true, r, &limit))
            bar_cell(out, name, dims[r], "spec", used, limit, has_quota, quota);
        else
            unbounded_cell(out, used, has_quota, quota, unit_of("spec", dims[r]));
    }
    for (uint32_t a = 0; a < tly_queues_naccres(c->qs); a++) {
        if (!c->ar_col[a])
            continue;
        tly_qty used = tly_queues_accounted_used(c->qs, q, a);
        tly_qty limit = tly_queues_accounted_limit(c->qs, q, a);
        if (tly_qty_sign(limit) >= 0)
            bar_cell(out, name, tly_queues_accres(c->qs, a)->meta.name, "accounted", used, limit,
                     false, limit);
        else
            unbounded_cell(out, used, false, limit, unit_of("accounted", tly_queues_accres(c->qs, a)->meta.name));
    }
    fputs("<td class=\"gpus\">", out);
    bool any = false;
    for (uint32_t p = 0; p < c->nproducts; p++) {
        uint32_t n = c->pcount[(size_t)q * c->nproducts + p];
        if (!n)
            continue;
        any = true;
        fputs("<span class=\"gpu\" data-product=\"", out);
        esc(out, c->products[p]);
        fprintf(out, "\" data-count=\"%u\">", n);
        esc(out, c->products[p]);
        fputs(" &times; ", out);
        count_noun(out, n, "pod", "pods");
        fputs("</span> ", out);
    }
    if (!any)
        fputs("<span class=\"muted\">&mdash;</span>", out);
    fputs("</td></tr>\n", out);
}

static void queue_rows(FILE *out, qctx *c, int32_t parent, int depth)
{
    if (depth > MAX_TREE_DEPTH)
        return;
    for (uint32_t i = 0; i < c->nq; i++) {
        if (c->shown[i] || tly_queues_parent(c->qs, i) != parent)
            continue;
        /*
        ** Each root queue's subtree is one tbody whose rows below the root fold
        ** away with the root's checkbox (CSS :has, no script); folded to begin
        ** with when the tree is large.
        */
        if (depth == 0)
            fputs("<tbody class=\"tree\">\n", out);
        queue_row(out, c, i, depth);
        queue_rows(out, c, (int32_t)i, depth + 1);
        if (depth == 0)
            fputs("</tbody>\n", out);
    }
}

static void write_queues(FILE *out, tly_store *s, tly_podsched *ps)
{
    qctx c = {.s = s, .ps = ps, .qs = tly_podsched_queues(ps)};
    c.nq = tly_queues_count(c.qs);
    uint32_t na = tly_queues_naccres(c.qs), ncols = 0;
    fputs("<section id=\"queues\">\n<h2>Queues</h2>\n", out);
    if (!c.nq) {
        fputs("<p class=\"muted\">No queues in the input.</p>\n</section>\n", out);
        return;
    }
    c.ar_col = calloc(na ? na : 1, sizeof *c.ar_col);
    c.shown = calloc(c.nq, sizeof *c.shown);
    if (!c.ar_col || !c.shown) {
        fputs("<p class=\"muted\">out of memory</p>\n</section>\n", out);
        free(c.ar_col);
        free(c.shown);
        return;
    }
    for (uint32_t a = 0; a < na; a++)
        for (uint32_t q = 0; q < c.nq && !c.ar_col[a]; q++)
            if (tly_qty_sign(tly_queues_accounted_limit(c.qs, q, a)) >= 0)
                c.ar_col[a] = true;
    for (uint32_t a = 0; a < na; a++)
        ncols += c.ar_col[a];
    count_products(&c);

    fputs("<p class=\"legend\">Usage of each queue's subtree after the simulation against the "
          "queue's own limit; cpu in cores, memory in bytes, gpu in devices. A tick marks the "
          "quota.<span class=\"sw\" style=\"background:var(--ok)\"></span>below 90%"
          "<span class=\"sw\" style=\"background:var(--hi)\"></span>at or over 90%"
          "<span class=\"sw\" style=\"background:var(--over)\"></span>over the limit</p>\n",
          out);
    fputs("<table class=\"queues\">\n<colgroup><col class=\"qn\">", out);
    for (uint32_t k = 0; k < TLY_QR_COUNT + ncols; k++)
        fputs("<col>", out);
    fputs("<col class=\"gp\"></colgroup>\n<thead><tr><th rowspan=\"2\">Queue</th>"
          "<th class=\"grp\" colspan=\"3\">spec.resources</th>",
          out);
    if (ncols)
        fprintf(out, "<th class=\"grp\" colspan=\"%u\">AccountedResources</th>", ncols);
    fputs("<th rowspan=\"2\">GPU products<br><span class=\"muted\">Running/Bound pods</span></th>"
          "</tr>\n<tr><th>cpu</th><th>memory</th><th>gpu</th>",
          out);
    for (uint32_t a = 0; a < na; a++) {
        if (!c.ar_col[a])
            continue;
        fputs("<th>", out);
        esc(out, tly_queues_accres(c.qs, a)->meta.name);
        fputs("</th>", out);
    }
    fputs("</tr></thead>\n", out);
    queue_rows(out, &c, -1, 0);
    /* Queues the walk from the roots did not reach (a parentQueue cycle). */
    fputs("<tbody>\n", out);
    for (uint32_t i = 0; i < c.nq; i++)
        if (!c.shown[i])
            queue_row(out, &c, i, -1);
    fputs("</tbody>\n</table>\n</section>\n", out);
    free(c.ar_col);
    free(c.shown);
    free(c.products);
    free(c.pcount);
}

/* ---- pods not placed ------------------------------------------------------ */

static int state_rank(const char *st)
{
    static const char *const order[] = {"Gated", "Unschedulable", "Invalid"};
    for (int k = 0; k < 3; k++)
        if (st && !strcmp(st, order[k]))
            return k;
    return 3;
}

static bool pod_placed(const char *st)
{
    return st && (!strcmp(st, "Running") || !strcmp(st, "Bound") || !strcmp(st, "Succeeded") ||
                  !strcmp(st, "Failed"));
}

/* Sort key of a pod or Run in the grouped lists: (rank, state, reason, index). */
typedef struct {
    int rank;
    const char *state, *reason, *queue;  /* queue "" for Runs */
    uint32_t i;
} gkey;

static int cmp_gkey(const void *a, const void *b)
{
    const gkey *x = a, *y = b;
    int c;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if ((c = strcmp(x->state, y->state)))
        return c;
    if ((c = strcmp(x->reason, y->reason)))
        return c;
    if ((c = strcmp(x->queue, y->queue)))
        return c;
    return x->i < y->i ? -1 : x->i > y->i;
}

static bool same_group(const gkey *x, const gkey *y)
{
    return x->rank == y->rank && !strcmp(x->state, y->state) && !strcmp(x->reason, y->reason);
}

/* A CSS-safe token for a class name: letters only, else "other". */
static const char *class_token(const char *s)
{
    if (!s || !*s)
        return "other";
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return "other";
    return s;
}

static void group_heading(FILE *out, const char *state, const char *reason, uint32_t n,
                          const char *one, const char *many)
{
    fprintf(out, "<div class=\"group %s\">\n<h3><span class=\"state %s\">", class_token(state),
            class_token(state));
    esc(out, state ? state : "?");
    fputs("</span>", out);
    esc(out, reason ? reason : "(no reason)");
    fputs(" <span class=\"muted\">&middot; ", out);
    count_noun(out, n, one, many);
    fputs("</span></h3>\n<ul class=\"items\">\n", out);
}

/*
** A page that stays readable at a real cluster's size (issue 15 item 19):
** per (state, reason) the pods are counted by queue; each queue shows at
** most POD_LIST_CAP of its pods, and the explain text of its first one only
** (the others read the same way; `tally explain pod` gives any of them).
*/
#define POD_LIST_CAP 10

/* One pod; its message is left out when it is the one just shown (prev). */
static void pod_item(FILE *out, tly_podsched *ps, uint32_t i, bool explain, const char *prev)
{
    const tly_ps_result *r = tly_podsched_pod(ps, i);
    fputs("<li class=\"item\" data-state=\"", out);
    esc(out, r->state);
    fputs("\" data-reason=\"", out);
    esc(out, r->reason);
    fputs("\" data-pod=\"", out);
    nsname(out, &r->pod->meta);
    fputs("\"><span class=\"who\">", out);
    nsname(out, &r->pod->meta);
    fputs("</span> <span class=\"muted\">queue</span> ", out);
    esc(out, r->queue);
    if (r->message && prev && !strcmp(r->message, prev)) {
        fputs(" <span class=\"muted\">(the same message)</span>", out);
    } else if (r->message) {
        fputs("<p class=\"msg\">", out);
        esc(out, r->message);
        fputs("</p>\n", out);
    }
    if (explain)
        explain_block(out, ps, NULL, i);
    fputs("</li>\n", out);
}

/* keys[k..e): one (state, reason) group, queue by queue. */
static void pod_group(FILE *out, tly_podsched *ps, const gkey *keys, uint32_t k, uint32_t e)
{
    group_heading(out, keys[k].state, keys[k].reason, e - k, "pod", "pods");
    while (k < e) {
        uint32_t q = k;
        while (q < e && !strcmp(keys[q].queue, keys[k].queue))
            q++;
        fputs("<li class=\"qgroup\" data-queue=\"", out);
        esc(out, keys[k].queue);
        fputs("\"><span class=\"muted\">queue</span> <b>", out);
        esc(out, keys[k].queue);
        fputs("</b> <span class=\"muted\">&middot; ", out);
        count_noun(out, q - k, "pod", "pods");
        fputs("</span></li>\n", out);
        for (uint32_t j = k; j < q && j < k + POD_LIST_CAP; j++)
            pod_item(out, ps, keys[j].i, j == k, j > k ? tly_podsched_pod(ps, keys[j - 1].i)->message : NULL);
        if (q - k > POD_LIST_CAP)
            fprintf(out, "<li class=\"more muted\">&hellip; and %u more of this queue and reason "
                         "(<code>tally simulate -o json</code> lists every pod, <code>tally explain pod "
                         "NS/NAME</code> explains any)</li>\n",
                    q - k - POD_LIST_CAP);
        k = q;
    }
    fputs("</ul>\n</div>\n", out);
}

static void write_pending_pods(FILE *out, tly_podsched *ps)
{
    uint32_t np = tly_podsched_npods(ps), n = 0;
    gkey *keys = np ? malloc(np * sizeof *keys) : NULL;
    for (uint32_t i = 0; keys && i < np; i++) {
        const tly_ps_result *r = tly_podsched_pod(ps, i);
        if (pod_placed(r->state))
            continue;
        keys[n++] = (gkey){state_rank(r->state), r->state ? r->state : "",
                           r->reason ? r->reason : "", r->queue ? r->queue : "", i};
    }
    fputs("<section id=\"pending\">\n<h2>Pods not placed", out);
    fprintf(out, " <span class=\"muted\">(%u)</span></h2>\n", n);
    if (!n) {
        fputs("<p class=\"muted\">Every pod tally schedules is placed.</p>\n</section>\n", out);
        free(keys);
        return;
    }
    fputs("<p class=\"legend\">Grouped by state and reason, then by queue. Gated: held back by queue policy "
          "(not a node-fit failure). Unschedulable: passed queue policy, no node fits. "
          "Invalid: the pod's own spec is malformed. Each queue lists up to 10 pods; the first one's "
          "explanation opens with a click.</p>\n",
          out);
    qsort(keys, n, sizeof *keys, cmp_gkey);
    for (uint32_t k = 0; k < n;) {
        uint32_t e = k + 1;
        while (e < n && same_group(&keys[k], &keys[e]))
            e++;
        pod_group(out, ps, keys, k, e);
        k = e;
    }
    fputs("</section>\n", out);
    free(keys);
}

/* ---- Runtime Pods and Runs ------------------------------------------------ */

typedef struct {
    const char *name;
    uint32_t id;
} rcol;

static int cmp_rcol(const void *a, const void *b)
{
    const rcol *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->id < y->id ? -1 : x->id > y->id);
}

static void write_heatmap(FILE *out, tly_store *s, tly_runsched *rs)
{
    tly_names *names = tly_store_names(s);
    uint32_t np = tly_runsched_npods(rs), nn = tly_names_count(names), ncols = 0;
    fputs("<section id=\"runtime\">\n<h2>Runtime Pods: utilisation per resource</h2>\n", out);
    if (!np) {
        fputs("<p class=\"muted\">No Runtime Pods in the input.</p>\n</section>\n", out);
        return;
    }
    bool *col = calloc(nn ? nn : 1, sizeof *col);
    rcol *cols = calloc(nn ? nn : 1, sizeof *cols);
    if (!col || !cols) {
        fputs("<p class=\"muted\">out of memory</p>\n</section>\n", out);
        free(col);
        free(cols);
        return;
    }
    for (uint32_t i = 0; i < np; i++) {
        const tly_rs_pod_result *p = tly_runsched_pod_at(rs, i);
        for (uint32_t k = 0; k < p->capacity->n; k++)
            if (p->capacity->v[k].id < nn)
                col[p->capacity->v[k].id] = true;
        for (uint32_t id = 0; id < p->used->n && id < nn; id++)
            if (!tly_qty_is_zero(p->used->v[id]))
                col[id] = true;
    }
    for (uint32_t id = 0; id < nn; id++)
        if (col[id])
            cols[ncols++] = (rcol){tly_names_str(names, id), id};
    qsort(cols, ncols, sizeof *cols, cmp_rcol);

    fputs("<p class=\"legend\">Each cell: the scheduler's usage (active and assumed Runs) of the "
          "Pod's effective capacity, shaded by the percentage; runtimed's admitted amount is in "
          "the cell's tooltip.",
          out);
    for (int h = 0; h <= 10; h += 5)
        fprintf(out, "<span class=\"sw h%d\"></span>%d%%", h, h * 10);
    fputs("<span class=\"sw hx\"></span>over capacity</p>\n", out);
    fputs("<table class=\"heat\">\n<thead><tr><th>Runtime Pod</th><th>runtime</th><th>state</th>",
          out);
    for (uint32_t k = 0; k < ncols; k++) {
        fputs("<th>", out);
        esc(out, tly_names_str(names, cols[k].id));
        fputs("</th>", out);
    }
    fputs("</tr></thead>\n<tbody>\n", out);
    for (uint32_t i = 0; i < np; i++) {
        const tly_rs_pod_result *p = tly_runsched_pod_at(rs, i);
        bool avail = p->state == TLY_RPOD_AVAILABLE;
        fprintf(out, "<tr class=\"%s\" data-runtime-pod=\"", avail ? "available" : "unavailable");
        nsname(out, &p->pod->meta);
        fputs("\"><td class=\"pod who\">", out);
        nsname(out, &p->pod->meta);
        fputs("</td><td>", out);
        esc(out, p->runtime);
        fputs("</td><td>", out);
        esc(out, tly_rpod_state_text(p->state));
        fputs("</td>", out);
        for (uint32_t k = 0; k < ncols; k++) {
            bool found;
            tly_qty cap = tly_rlist_get(p->capacity, cols[k].id, &found);
            tly_qty used = tly_rvec_get(p->used, cols[k].id);
            if (!found && tly_qty_is_zero(used)) {
                fputs("<td class=\"na\" title=\"not in this Pod's capacity\">&mdash;</td>", out);
                continue;
            }
            int pct = tly_qty_sign(cap) > 0 ? pct_of(used, cap)
                                            : (tly_qty_sign(used) > 0 ? 99999 : 0);
            bool over = tly_qty_cmp(used, cap) > 0;
            int shade = pct / 10 > 10 ? 10 : pct / 10;
            if (over)
                fputs("<td class=\"cell hx\" data-resource=\"", out);
            else
                fprintf(out, "<td class=\"cell h%d\" data-resource=\"", shade);
            esc(out, tly_names_str(names, cols[k].id));
            fprintf(out, "\" data-pct=\"%d\" title=\"", pct);
            esc(out, tly_names_str(names, cols[k].id));
            fputs(": used ", out);
            qty(out, used);
            fputs(", admitted by runtimed ", out);
            qty(out, tly_rvec_get(&p->admitted, cols[k].id));
            fputs(", capacity ", out);
            qty(out, cap);
            fputs("\">", out);
            qty(out, used);
            fputc('/', out);
            qty(out, cap);
            if (pct >= 99999)
                fputs("<small>over</small>", out);
            else
                fprintf(out, "<small>%d%%</small>", pct);
            fputs("</td>", out);
        }
        fputs("</tr>\n", out);
    }
    fputs("</tbody>\n</table>\n</section>\n", out);
    free(col);
    free(cols);
}

static bool run_waits(const tly_rs_run_result *r)
{
    return r->reason || r->phase == TLY_RUN_PENDING;
}

static void write_runs(FILE *out, tly_runsched *rs)
{
    uint32_t nr = tly_runsched_nruns(rs), n = 0;
    gkey *keys = nr ? malloc(nr * sizeof *keys) : NULL;
    for (uint32_t i = 0; keys && i < nr; i++) {
        const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
        if (run_waits(r))
            keys[n++] = (gkey){(int)r->phase, "", r->reason ? r->reason : "", "", i};
    }
    fprintf(out, "<section id=\"runs\">\n<h2>Runs waiting or failed <span class=\"muted\">(%u)</span>"
                 "</h2>\n",
            n);
    if (!n) {
        fputs("<p class=\"muted\">No Run is waiting.</p>\n</section>\n", out);
        free(keys);
        return;
    }
    qsort(keys, n, sizeof *keys, cmp_gkey);
    for (uint32_t k = 0; k < n;) {
        uint32_t e = k + 1;
        while (e < n && same_group(&keys[k], &keys[e]))
            e++;
        const tly_rs_run_result *first = tly_runsched_run_at(rs, keys[k].i);
        group_heading(out, tly_run_phase_name(first->phase), first->reason, e - k, "Run", "Runs");
        for (; k < e; k++) {
            const tly_rs_run_result *r = tly_runsched_run_at(rs, keys[k].i);
            fputs("<li class=\"item\" data-phase=\"", out);
            esc(out, tly_run_phase_name(r->phase));
            fputs("\" data-reason=\"", out);
            esc(out, r->reason);
            fputs("\" data-run=\"", out);
            nsname(out, &r->run->meta);
            fputs("\"><span class=\"who\">", out);
            nsname(out, &r->run->meta);
            fputs("</span> <span class=\"muted\">runtime</span> ", out);
            esc(out, r->run->runtime ? r->run->runtime : "-");
            if (r->assigned) {
                fputs(" <span class=\"muted\">on</span> ", out);
                esc(out, r->assigned);
            }
            if (r->message) {
                fputs("<p class=\"msg\">", out);
                esc(out, r->message);
                fputs("</p>\n", out);
            }
            explain_block(out, NULL, rs, keys[k].i);
            fputs("</li>\n", out);
        }
        fputs("</ul>\n</div>\n", out);
    }
    fputs("</section>\n", out);
    free(keys);
}

/* ---- the page ------------------------------------------------------------- */

void tly_report_html_at(FILE *out, tly_store *s, tly_podsched *ps, tly_runsched *rs,
                        const char *title, int64_t now, bool have_clock)
{
    if (!title || !*title)
        title = "tally report";
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"tally\">\n<title>",
          out);
    esc(out, title);
    fputs("</title>\n<style>\n", out);
    fputs(CSS, out);
    fputs("</style>\n</head>\n<body>\n", out);
    write_header(out, s, ps, rs, title, now, have_clock);
    fputs("<main>\n", out);
    write_queues(out, s, ps);
    write_pending_pods(out, ps);
    write_heatmap(out, s, rs);
    write_runs(out, rs);
    fputs("</main>\n</body>\n</html>\n", out);
}

void tly_report_html(FILE *out, tly_store *s, tly_podsched *ps, tly_runsched *rs,
                     const char *title)
{
    int64_t now = tly_store_newest_time(s);
    tly_report_html_at(out, s, ps, rs, title, now, now != TLY_NO_TIME);
}
