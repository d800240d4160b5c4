/*
** serve.c: `tally serve` (contract section 7), the admission webhook.
**
**   tally serve --tls-cert FILE --tls-key FILE --state PATH... [--listen HOST:PORT]
**               [--reserve-upsizes[=TIMEOUT]] [--log-level LEVEL]
**
** This file is the process around the server (server.h): flags, loading the
** state, and signals. The signals are blocked in every thread before the
** server starts its workers and taken here with sigtimedwait(), so no
** handler runs asynchronously and no global flag is needed: SIGHUP re-reads
** --state and swaps it in whole, SIGTERM and SIGINT stop gracefully (exit 0),
** and the one-second timeout drives the housekeeping (certificate files,
** expired reservations).
**
** A state that cannot be read (a path missing or unreadable, a document that
** does not parse) is refused: at start the command exits 1, on SIGHUP the
** old state stays and the failure is logged and counted. Objects that fail
** to decode are left out with an error line, as `tally admit` does, so both
** decide against the same objects.
*/
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "common.h"
#include "live.h"
#include "tally/ctrl.h"
#include "tally/error.h"
#include "tally/lease.h"
#include "tally/metrics.h"
#include "tally/resv.h"
#include "tally/live.h"
#include "tally/queues.h"
#include "tally/reflector.h"
#include "tally/server.h"

#define DEFAULT_RESERVE_MS (120 * 1000)
#define SHUTDOWN_GRACE_MS 5000

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tally serve --tls-cert FILE --tls-key FILE (--state PATH... | --kubeconfig FILE\n"
            "                   [--context NAME] | --in-cluster) [options]\n\n"
            "Serves admission decisions (the answers of `tally admit`) over HTTPS.\n\n"
            "  --listen HOST:PORT          address to listen on (default :8443, every address)\n"
            "  --tls-cert FILE             PEM certificate chain; reloaded when the file changes\n"
            "  --tls-key FILE              PEM private key; reloaded when the file changes\n"
            "  --client-ca FILE            PEM CA certificate(s): /validate/* and /mutate/* answer 403\n"
            "                              without a client certificate they sign (the API server's);\n"
            "                              /healthz, /readyz, /metrics need none; reloaded on change\n"
            "  --state PATH...             objects to decide against; re-read on SIGHUP\n"
            "  --kubeconfig FILE, --context NAME, --in-cluster\n"
            "                              decide against the live cluster, kept by list and watch\n"
            "  --kube-api-qps N, --kube-api-burst N\n"
            "                              the API client's rate limit (default 50, burst 100)\n"
            "  --watch-stale-after D       not ready while a watch is broken longer (default 60s)\n"
            "  --watch-idle-timeout D      a watch silent this long is restarted (default 90s)\n"
            "  --discovery-interval D      how often a kind that is not served is looked for\n"
            "                              again (default 30s)\n"
            "  --controllers LIST          gating, status, runs (comma-separated; none by default)\n"
            "  --queue-admission-gating M  all (default), opt-in or off: which queues are gated\n"
            "  --reservation-timeout D     how long an admitted, unbound pod reserves its queue\n"
            "                              (default 10m)\n"
            "  --leader-elect[=BOOL]       only the Lease holder writes (default: on with\n"
            "                              controllers or --reserve-upsizes)\n"
            "  --lease-namespace NS, --lease-name NAME (default: the Pod's namespace, tally)\n"
            "  --lease-duration D, --renew-deadline D, --retry-period D (15s, 10s, 2s)\n"
            "  --reserve-upsizes[=TIMEOUT] admitted upsizes reserve their increase until the state\n"
            "                              shows them enacted, reverted or Infeasible, or TIMEOUT\n"
            "                              passes (default 2m; 90s, 500ms, 1h or seconds)\n"
            "  --allow-state-shrink        take a SIGHUP reload that has none of a kind the state\n"
            "                              had (refused by default: a truncated or emptied file)\n"
            "  --log-level LEVEL           debug, info (default), warn, error\n\n"
            "Endpoints: POST /validate/pods-resize, /validate/queues, /validate/accountedresources,\n"
            "/validate/runs; GET /healthz, /readyz, /metrics. SIGHUP reloads the state,\n"
            "SIGTERM/SIGINT stop.\n");
}

/* "90s", "2m", "500ms", "1h", "30" (seconds) -> milliseconds; -1 if bad. */
static int64_t parse_duration(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v <= 0)
        return -1;
    double ms;
    if (!*end || !strcmp(end, "s"))
        ms = v * 1000;
    else if (!strcmp(end, "ms"))
        ms = v;
    else if (!strcmp(end, "m"))
        ms = v * 60000;
    else if (!strcmp(end, "h"))
        ms = v * 3600000;
    else
        return -1;
    if (ms < 1 || ms > 7.0 * 24 * 3600 * 1000)
        return -1;
    return (int64_t)ms;
}

/*
** Loads the state; NULL with why set when a path cannot be read or a document
** does not parse (a diagnostic of error severity that names no object).
*/
static tly_store *load_state(int n, char **paths, char *why, size_t whylen)
{
    int errors = 0;
    tly_store *s = tly_cmd_load(n, paths, NULL, &errors);
    tly_diags *d = tly_store_diags(s);
    tly_diags_sort(d);
    const tly_diag *bad = NULL;
    for (size_t i = 0; i < tly_diags_count(d); i++) {
        const tly_diag *g = tly_diags_get(d, i);
        if (g->sev != TLY_SEV_ERROR)
            continue;
        tly_diag_print(stderr, g);
        if (!g->object && !bad)
            bad = g;
    }
    if (bad) {
        snprintf(why, whylen, "%s:%u:%u: %s", bad->file ? bad->file : "-", bad->line, bad->col, bad->msg);
        tly_store_destroy(s);
        return NULL;
    }
    return s;
}

/* The live mode's flags. */
typedef struct {
    int64_t stale_ms, idle_ms, recheck_ms;
    int controllers;             /* TLY_CTRL_* */
    int leader_elect;            /* -1: the default (on with controllers or --reserve-upsizes) */
    const char *lease_ns, *lease_name;
    int64_t lease_ms, renew_ms, retry_ms, reservation_ms;
    const char *gating;          /* --queue-admission-gating */
} live_flags;

static void count_kinds(const tly_store *s, uint32_t n[TLY_K_COUNT])
{
    for (int k = 0; k < TLY_K_COUNT; k++)
        n[k] = tly_store_count(s, k);
}

/*
** Whether a reloaded state has none of a kind the current one had (or no
** objects at all). A state file truncated or emptied while it was being
** rewritten still parses, and taken as it is it would drop every queue:
** resizes would then pass unchecked. Refused unless --allow-state-shrink;
** a file replaced by a rename (as a ConfigMap volume does) is never seen
** half-written.
*/
static bool shrinks(const uint32_t had[TLY_K_COUNT], const tly_store *s, char *err, size_t errlen)
{
    uint32_t total = 0, before = 0;
    for (int k = 0; k < TLY_K_COUNT; k++) {
        total += tly_store_count(s, k);
        before += had[k];
    }
    if (!total && before) {
        snprintf(err, errlen, "the reloaded state is empty (it had %u objects): a state file was probably "
                 "emptied while it was rewritten; replace state files with a rename, or pass "
                 "--allow-state-shrink", before);
        return true;
    }
    for (int k = 0; k < TLY_K_COUNT; k++)
        if (had[k] && !tly_store_count(s, k)) {
            snprintf(err, errlen, "the reloaded state has no %s (it had %u): a state file was probably "
                     "truncated while it was rewritten; replace state files with a rename, or pass "
                     "--allow-state-shrink", tly_kind_name(k), had[k]);
            return true;
        }
    return false;
}

/* The live mode's pieces, handed to the server as its source. */
typedef struct {
    tly_kube *kube;
    tly_live *live;
    tly_reflectors *refl;
    tly_lease *lease;
    tly_ctrl *ctrl;
    tly_resv *resv;              /* holds shared by every replica; NULL with none to hold */
    tly_server *srv;
    long stale_ms;
} live_mode;

static tly_store *live_acquire(void *ctx) { return tly_live_fork(((live_mode *)ctx)->live); }

static bool live_ready(void *ctx, char *why, size_t whylen)
{
    live_mode *m = ctx;
    return tly_reflectors_ready(m->refl, m->stale_ms, why, whylen);
}

static bool live_synced(void *ctx)
{
    char why[256];
    return live_ready(ctx, why, sizeof why);
}

static void live_metrics(void *ctx, FILE *out)
{
    live_mode *m = ctx;
    tly_reflectors_metrics(m->refl, out);
    if (m->ctrl)
        tly_ctrl_metrics(m->ctrl, out);
    else if (live_synced(m))
        tly_ctrl_queue_metrics(m->live, out);
    if (m->resv)
        tly_resv_metrics(m->resv, out);
    if (m->lease)
        fprintf(out, "# HELP tally_leader Whether this replica holds the lease (1) or not (0).\n"
                     "# TYPE tally_leader gauge\ntally_leader %d\n",
                tly_lease_leading(m->lease) ? 1 : 0);
}

static int live_decide(void *ctx, int endpoint, const tly_store *state, const char *body, size_t len,
                       tly_admit_result *res, char *err, size_t errlen)
{
    live_mode *m = ctx;
    if (endpoint == TLY_EP_PODS_RESIZE) {
        if (!m->resv || tly_resv_upsize_timeout(m->resv) <= 0)
            return TLY_ENOENT;  /* decided by the server as on files */
        int rc = tly_resv_upsize_review(m->resv, state, body, len, res, err, errlen);
        tly_metrics_reservations(tly_server_metrics(m->srv), tly_resv_count(m->resv, "upsizes"));
        return rc;
    }
    return m->ctrl ? tly_ctrl_decide(m->ctrl, endpoint, state, body, len, res, err, errlen) : TLY_ENOENT;
}

static void live_log(void *ctx, int level, const char *event, const char *kind, const char *msg)
{
    live_mode *m = ctx;
    const char *kv[] = {"kind", kind, "msg", msg};
    tly_server_log(m->srv, level, event, kv, 2);
}

static void lease_log(void *ctx, int level, const char *event, const char *msg)
{
    live_mode *m = ctx;
    const char *kv[] = {"msg", msg};
    tly_server_log(m->srv, level, event, kv, 1);
}

static void ctrl_log(void *ctx, int level, const char *event, const char *const *kv, size_t nkv)
{
    tly_server_log(((live_mode *)ctx)->srv, level, event, kv, nkv);
}

/*
** Whether holds go to the shared table (resv.h). TALLY_TEST_LOCAL_RESERVATIONS=1 keeps them per
** replica, the design before it, so that tests/live/reserve_race.py can show what it prevents.
*/
static bool share_holds(void)
{
    const char *v = getenv("TALLY_TEST_LOCAL_RESERVATIONS");
    return !v || strcmp(v, "1") != 0;
}

/* Starts the reflectors, the election and the controllers; the live state is the server's source. */
static int start_live(live_mode *m, tly_server *srv, const tly_cmd_live *lv, const live_flags *f,
                      int64_t reserve_ms)
{
    bool reserve = reserve_ms > 0;
    tly_kube *k;
    if (tly_cmd_live_connect("serve", lv, &k))
        return 1;
    tly_live_options lo = {.gating_mode = tly_gating_mode_parse(f->gating)};
    m->live = tly_live_create(&lo);
    m->srv = srv;
    m->stale_ms = (long)f->stale_ms;
    m->kube = k;
    tly_reflectors_options ro = {.kube = k, .live = m->live, .idle_ms = (long)f->idle_ms,
                                 .recheck_ms = (long)f->recheck_ms, .log = live_log, .log_ctx = m};
    m->refl = tly_reflectors_start(&ro);
    bool elect = f->leader_elect > 0 || (f->leader_elect < 0 && (f->controllers || reserve));
    const char *ns = f->lease_ns ? f->lease_ns : tly_kube_config_namespace(tly_kube_config_of(k));
    if (!ns)
        ns = "default";
    if (share_holds() && (reserve || (f->controllers & TLY_CTRL_RUNS))) {
        char name[300];
        snprintf(name, sizeof name, "%s-reservations", f->lease_name);
        tly_resv_options so = {.kube = k, .live = m->live, .ns = ns, .name = name, .upsize_timeout_ms = reserve_ms,
                               .log = lease_log, .log_ctx = m};
        m->resv = tly_resv_create(&so);
        char where[400];
        snprintf(where, sizeof where, "configmap %s/%s", ns, name);
        const char *kv[] = {"table", where, "upsizes", reserve ? "on" : "off",
                            "claims", (f->controllers & TLY_CTRL_RUNS) ? "on" : "off"};
        tly_server_log(srv, TLY_LOG_INFO, "reservations-shared", kv, 3);
    }
    if (elect) {
        tly_lease_options eo = {.kube = k, .ns = ns, .name = f->lease_name,
                                .duration_ms = (long)f->lease_ms, .renew_deadline_ms = (long)f->renew_ms,
                                .retry_ms = (long)f->retry_ms, .log = lease_log, .log_ctx = m};
        m->lease = tly_lease_start(&eo);
    }
    if (f->controllers) {
        tly_ctrl_options co = {.kube = k, .live = m->live, .lease = m->lease,
                               .controllers = (unsigned)f->controllers,
                               .reservation_timeout_ms = (long)f->reservation_ms, .ready = live_synced,
                               .ready_ctx = m, .resv = m->resv, .log = ctrl_log, .log_ctx = m};
        m->ctrl = tly_ctrl_start(&co);
    }
    tly_server_source src = {m, live_acquire, live_ready, live_metrics, live_decide};
    tly_server_set_source(srv, &src);
    return 0;
}

static void stop_live(live_mode *m)
{
    tly_ctrl_stop(m->ctrl);        /* no write after this */
    tly_lease_stop(m->lease);      /* a leader gives its Lease up */
    tly_reflectors_stop(m->refl);
    tly_resv_destroy(m->resv);     /* after the server stopped: no review in flight */
    tly_live_destroy(m->live);
    tly_kube_destroy(m->kube);
}

int tly_cmd_serve(int argc, char **argv)
{
    tly_server_config cfg = {.listen = ":8443", .log_level = TLY_LOG_INFO};
    char **paths = calloc((size_t)argc + 1, sizeof *paths);
    int npaths = 0;
    if (!paths)
        return 1;
    int rc = 2;
    tly_cmd_live lv;
    tly_cmd_live_init(&lv);
    live_flags lf = {.stale_ms = 60000, .idle_ms = 90000, .recheck_ms = 30000, .leader_elect = -1,
                     .lease_name = "tally", .lease_ms = TLY_LEASE_DEFAULT_DURATION_MS,
                     .renew_ms = TLY_LEASE_DEFAULT_RENEW_MS, .retry_ms = TLY_LEASE_DEFAULT_RETRY_MS,
                     .reservation_ms = TLY_CTRL_DEFAULT_RESERVATION_MS};
    live_mode lm = {0};
    bool allow_shrink = false;
    uint32_t had[TLY_K_COUNT] = {0};  /* objects of each kind in the state last taken */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        int lr = tly_cmd_live_option(argc, argv, &i, "serve", &lv);
        if (lr < 0)
            goto out;
        if (lr > 0)
            continue;
        static const char *const durations[] = {"--watch-stale-after", "--watch-idle-timeout",
                                                "--discovery-interval", "--lease-duration",
                                                "--renew-deadline", "--retry-period",
                                                "--reservation-timeout"};
        int64_t *dst[] = {&lf.stale_ms, &lf.idle_ms, &lf.recheck_ms, &lf.lease_ms, &lf.renew_ms,
                          &lf.retry_ms, &lf.reservation_ms};
        int di = -1;
        for (int k = 0; k < 7; k++) {
            size_t L = strlen(durations[k]);
            if (!strncmp(a, durations[k], L) && (a[L] == 0 || a[L] == '='))
                di = k;
        }
        if (di >= 0) {
            size_t L = strlen(durations[di]);
            const char *d = a[L] == '=' ? a + L + 1 : i + 1 < argc ? argv[++i] : NULL;
            *dst[di] = d ? parse_duration(d) : -1;
            if (*dst[di] < 0) {
                fprintf(stderr, "tally serve: %s: expected a duration such as 60s, 2m, 500ms\n",
                        durations[di]);
                goto out;
            }
            continue;
        }
        if (!strcmp(a, "--leader-elect") || !strcmp(a, "--leader-elect=true")) {
            lf.leader_elect = 1;
            continue;
        }
        if (!strcmp(a, "--leader-elect=false")) {
            lf.leader_elect = 0;
            continue;
        }
        /* --flag VALUE or --flag=VALUE for the flags that take one. */
        static const char *const valued[] = {"--listen", "--tls-cert", "--tls-key", "--log-level",
                                             "--controllers", "--lease-namespace", "--lease-name",
                                             "--queue-admission-gating", "--client-ca"};
        int which = -1;
        for (int k = 0; k < 9; k++) {
            size_t L = strlen(valued[k]);
            if (!strncmp(a, valued[k], L) && (a[L] == 0 || a[L] == '=')) {
                which = k;
                if (a[L] == '=') {
                    val = a + L + 1;
                } else if (i + 1 < argc) {
                    val = argv[++i];
                } else {
                    fprintf(stderr, "tally serve: %s needs a value\n", valued[k]);
                    goto out;
                }
            }
        }
        if (which == 8) {
            cfg.client_ca = val;
        } else if (which == 4) {
            char cerr[256];
            lf.controllers = tly_ctrl_parse(val, cerr, sizeof cerr);
            if (lf.controllers < 0) {
                fprintf(stderr, "tally serve: --controllers %s: %s\n", val, cerr);
                goto out;
            }
        } else if (which == 5) {
            lf.lease_ns = val;
        } else if (which == 6) {
            lf.lease_name = val;
        } else if (which == 7) {
            if (tly_cmd_gating_check("serve", val))
                goto out;
            lf.gating = val;
        } else if (which == 0) {
            cfg.listen = val;
        } else if (which == 1) {
            cfg.tls_cert = val;
        } else if (which == 2) {
            cfg.tls_key = val;
        } else if (which == 3) {
            cfg.log_level = tly_log_level_parse(val);
            if (cfg.log_level < 0) {
                fprintf(stderr, "tally serve: --log-level %s: expected debug, info, warn or error\n", val);
                goto out;
            }
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            rc = 0;
            goto out;
        } else if (!strcmp(a, "--allow-state-shrink")) {
            allow_shrink = true;
        } else if (!strcmp(a, "--reserve-upsizes")) {
            cfg.reserve_upsizes_ms = DEFAULT_RESERVE_MS;
        } else if (!strncmp(a, "--reserve-upsizes=", 18)) {
            cfg.reserve_upsizes_ms = parse_duration(a + 18);
            if (cfg.reserve_upsizes_ms < 0) {
                fprintf(stderr, "tally serve: --reserve-upsizes=%s: expected a duration such as 90s, "
                                "2m, 500ms\n", a + 18);
                goto out;
            }
        } else if (!strcmp(a, "--state") || !strncmp(a, "--state=", 8)) {
            if (a[7] == '=')
                paths[npaths++] = (char *)a + 8;
            /* Every following argument up to the next flag is a path. */
            while (i + 1 < argc && (argv[i + 1][0] != '-' || !argv[i + 1][1]))
                paths[npaths++] = argv[++i];
        } else {
            fprintf(stderr, "tally serve: unknown option '%s'\n", a);
            usage(stderr);
            goto out;
        }
    }
    if (cfg.client_ca && (!cfg.tls_cert || !cfg.tls_key)) {
        fprintf(stderr, "tally serve: --client-ca needs TLS (--tls-cert and --tls-key): a client "
                        "certificate is presented in the TLS handshake\n");
        goto out;
    }
    if (!cfg.tls_cert || !cfg.tls_key) {
        fprintf(stderr, "tally serve: --tls-cert and --tls-key are required\n");
        usage(stderr);
        goto out;
    }
    if (lf.controllers && !lv.set) {
        fprintf(stderr, "tally serve: --controllers needs the live cluster (--kubeconfig or --in-cluster)\n");
        goto out;
    }
    if (lf.renew_ms >= lf.lease_ms || lf.retry_ms >= lf.renew_ms) {
        fprintf(stderr, "tally serve: want --retry-period < --renew-deadline < --lease-duration "
                        "(a leader must give up before another may take over)\n");
        goto out;
    }
    if ((npaths == 0) == !lv.set) {
        fprintf(stderr, npaths ? "tally serve: give --state PATH... or a live source (--kubeconfig, "
                                 "--context, --in-cluster), not both\n"
                               : "tally serve: --state PATH... or a live source (--kubeconfig FILE, "
                                 "--in-cluster) is required\n");
        usage(stderr);
        goto out;
    }
    rc = 1;

    /* Block the signals before any thread exists, so every worker inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* In live mode the shared table holds upsize reservations (start_live), not the server. */
    int64_t reserve_ms = cfg.reserve_upsizes_ms;
    if (lv.set && share_holds())
        cfg.reserve_upsizes_ms = 0;
    char err[512];
    tly_server *srv = tly_server_create(&cfg, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "tally serve: %s\n", err);
        goto out;
    }
    if (lv.set) {
        if (start_live(&lm, srv, &lv, &lf, reserve_ms)) {
            tly_server_destroy(srv);
            goto out;
        }
    } else {
        tly_store *state = load_state(npaths, paths, err, sizeof err);
        if (!state) {
            tly_server_flush_log(srv);
            fprintf(stderr, "tally serve: cannot load the state: %s\n", err);
            tly_server_destroy(srv);
            goto out;
        }
        count_kinds(state, had);
        tly_server_set_state(srv, state);
    }
    if (tly_server_start(srv, err, sizeof err) != 0) {
        tly_server_flush_log(srv);
        fprintf(stderr, "tally serve: %s\n", err);
        if (lv.set)
            stop_live(&lm);
        tly_server_destroy(srv);
        goto out;
    }
    for (;;) {
        struct timespec tick = {1, 0};
        int sig = sigtimedwait(&set, NULL, &tick);
        if (sig == SIGHUP && lv.set) {
            const char *kv[] = {"msg", "the live state follows the API server; nothing to reload"};
            tly_server_log(srv, TLY_LOG_INFO, "sighup-ignored", kv, 1);
        } else if (sig == SIGHUP) {
            /* The reload prints an object it cannot decode to stderr: after the lines logged so far. */
            tly_server_flush_log(srv);
            tly_store *s = load_state(npaths, paths, err, sizeof err);
            if (s && !allow_shrink && shrinks(had, s, err, sizeof err)) {
                tly_store_destroy(s);
                s = NULL;
            }
            if (s) {
                count_kinds(s, had);
                tly_server_set_state(srv, s);
            } else {
                tly_server_state_failed(srv, err);
            }
        } else if (sig == SIGTERM || sig == SIGINT) {
            const char *kv[] = {"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"};
            tly_server_log(srv, TLY_LOG_INFO, "shutdown", kv, 1);
            break;
        } else {
            tly_server_tick(srv);
        }
    }
    tly_server_stop(srv, SHUTDOWN_GRACE_MS);
    if (lv.set)
        stop_live(&lm);  /* before the server: the reflectors log through it */
    tly_server_destroy(srv);
    rc = 0;
out:
    free(paths);
    return rc;
}
