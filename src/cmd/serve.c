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
#include "tally/live.h"
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
            "  --state PATH...             objects to decide against; re-read on SIGHUP\n"
            "  --kubeconfig FILE, --context NAME, --in-cluster\n"
            "                              decide against the live cluster, kept by list and watch\n"
            "  --kube-api-qps N, --kube-api-burst N\n"
            "                              the API client's rate limit (default 50, burst 100)\n"
            "  --watch-stale-after D       not ready while a watch is broken longer (default 60s)\n"
            "  --watch-idle-timeout D      a watch silent this long is restarted (default 90s)\n"
            "  --discovery-interval D      how often a kind that is not served is looked for\n"
            "                              again (default 30s)\n"
            "  --reserve-upsizes[=TIMEOUT] admitted upsizes reserve their increase until the state\n"
            "                              shows them enacted, reverted or Infeasible, or TIMEOUT\n"
            "                              passes (default 2m; 90s, 500ms, 1h or seconds)\n"
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

/* The live mode's pieces, handed to the server as its source. */
typedef struct {
    tly_kube *kube;
    tly_live *live;
    tly_reflectors *refl;
    tly_server *srv;
    long stale_ms;
} live_mode;

static tly_store *live_acquire(void *ctx) { return tly_live_fork(((live_mode *)ctx)->live); }

static bool live_ready(void *ctx, char *why, size_t whylen)
{
    live_mode *m = ctx;
    return tly_reflectors_ready(m->refl, m->stale_ms, why, whylen);
}

static void live_metrics(void *ctx, FILE *out) { tly_reflectors_metrics(((live_mode *)ctx)->refl, out); }

static void live_log(void *ctx, int level, const char *event, const char *kind, const char *msg)
{
    live_mode *m = ctx;
    const char *kv[] = {"kind", kind, "msg", msg};
    tly_server_log(m->srv, level, event, kv, 2);
}

/* Starts the reflectors and makes the live state the server's source. */
static int start_live(live_mode *m, tly_server *srv, const tly_cmd_live *lv, long stale_ms,
                      long idle_ms, long recheck_ms)
{
    tly_kube *k;
    if (tly_cmd_live_connect("serve", lv, &k))
        return 1;
    m->live = tly_live_create(NULL);
    m->srv = srv;
    m->stale_ms = stale_ms;
    tly_reflectors_options ro = {.kube = k, .live = m->live, .idle_ms = idle_ms,
                                 .recheck_ms = recheck_ms, .log = live_log, .log_ctx = m};
    m->refl = tly_reflectors_start(&ro);
    m->kube = k;
    tly_server_source src = {m, live_acquire, live_ready, live_metrics};
    tly_server_set_source(srv, &src);
    return 0;
}

static void stop_live(live_mode *m)
{
    tly_reflectors_stop(m->refl);
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
    int64_t stale_ms = 60000, idle_ms = 90000, recheck_ms = 30000;
    live_mode lm = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        int lr = tly_cmd_live_option(argc, argv, &i, "serve", &lv);
        if (lr < 0)
            goto out;
        if (lr > 0)
            continue;
        static const char *const durations[] = {"--watch-stale-after", "--watch-idle-timeout",
                                                "--discovery-interval"};
        int64_t *dst[] = {&stale_ms, &idle_ms, &recheck_ms};
        int di = -1;
        for (int k = 0; k < 3; k++) {
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
        /* --flag VALUE or --flag=VALUE for the flags that take one. */
        static const char *const valued[] = {"--listen", "--tls-cert", "--tls-key", "--log-level"};
        int which = -1;
        for (int k = 0; k < 4; k++) {
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
        if (which == 0) {
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
    if (!cfg.tls_cert || !cfg.tls_key) {
        fprintf(stderr, "tally serve: --tls-cert and --tls-key are required\n");
        usage(stderr);
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

    char err[512];
    tly_server *srv = tly_server_create(&cfg, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "tally serve: %s\n", err);
        goto out;
    }
    if (lv.set) {
        if (start_live(&lm, srv, &lv, (long)stale_ms, (long)idle_ms, (long)recheck_ms)) {
            tly_server_destroy(srv);
            goto out;
        }
    } else {
        tly_store *state = load_state(npaths, paths, err, sizeof err);
        if (!state) {
            fprintf(stderr, "tally serve: cannot load the state: %s\n", err);
            tly_server_destroy(srv);
            goto out;
        }
        tly_server_set_state(srv, state);
    }
    if (tly_server_start(srv, err, sizeof err) != 0) {
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
            tly_store *s = load_state(npaths, paths, err, sizeof err);
            if (s)
                tly_server_set_state(srv, s);
            else
                tly_server_state_failed(srv, err);
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
