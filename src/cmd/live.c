/*
** live.c: the live source of `simulate`, `explain`, `validate` and
** `snapshot` (live.h): flags, connecting, and one LIST of everything.
*/
#include "live.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/capture.h"
#include "tally/error.h"

void tly_cmd_live_init(tly_cmd_live *lv)
{
    memset(lv, 0, sizeof *lv);
    lv->opt.qps = TLY_KUBE_DEFAULT_QPS;
    lv->opt.burst = TLY_KUBE_DEFAULT_BURST;
}

/* The value of --flag VALUE or --flag=VALUE, or NULL when argv[*i] is not flag. */
static const char *valued(int argc, char **argv, int *i, const char *flag, bool *missing)
{
    size_t n = strlen(flag);
    const char *a = argv[*i];
    *missing = false;
    if (strncmp(a, flag, n))
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n])
        return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

int tly_cmd_live_option(int argc, char **argv, int *i, const char *cmd, tly_cmd_live *lv)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--in-cluster")) {
        lv->src.in_cluster = true;
        lv->set = true;
        return 1;
    }
    static const char *const flags[] = {"--kubeconfig", "--context", "--kube-api-qps",
                                        "--kube-api-burst"};
    for (int f = 0; f < 4; f++) {
        bool missing;
        const char *v = valued(argc, argv, i, flags[f], &missing);
        if (missing) {
            fprintf(stderr, "tally %s: %s needs a value\n", cmd, flags[f]);
            return -1;
        }
        if (!v)
            continue;
        char *end;
        errno = 0;
        if (f == 0) {
            lv->src.kubeconfig = v;
            lv->set = true;
        } else if (f == 1) {
            lv->src.context = v;
            lv->set = true;
        } else if (f == 2) {
            lv->opt.qps = strtod(v, &end);
            if (errno || end == v || *end || lv->opt.qps < 0) {
                fprintf(stderr, "tally %s: --kube-api-qps %s: expected a number >= 0 (0: no limit)\n",
                        cmd, v);
                return -1;
            }
        } else {
            long b = strtol(v, &end, 10);
            if (errno || end == v || *end || b < 1 || b > 100000) {
                fprintf(stderr, "tally %s: --kube-api-burst %s: expected a whole number from 1 to "
                                "100000\n",
                        cmd, v);
                return -1;
            }
            lv->opt.burst = (int)b;
        }
        return 1;
    }
    return 0;
}

int tly_cmd_live_connect(const char *cmd, const tly_cmd_live *lv, tly_kube **out)
{
    char err[2048];
    tly_kube_config *cfg;
    *out = NULL;
    if (lv->src.in_cluster && (lv->src.kubeconfig || lv->src.context)) {
        fprintf(stderr, "tally %s: --in-cluster cannot go with --kubeconfig or --context\n", cmd);
        return 1;
    }
    if (tly_kube_config_load(&lv->src, &cfg, err, sizeof err) != TLY_OK ||
        tly_kube_create(cfg, &lv->opt, out, err, sizeof err) != TLY_OK) {
        fprintf(stderr, "tally %s: %s\n", cmd, err);
        return 1;
    }
    return 0;
}

int tly_cmd_live_capture(const char *cmd, const tly_cmd_live *lv, const char *absent_tail,
                         tly_kube_capture **out)
{
    tly_kube *k;
    *out = NULL;
    if (tly_cmd_live_connect(cmd, lv, &k))
        return 1;
    char err[2048];
    int rc = tly_kube_capture_run(k, out, err, sizeof err);
    tly_kube_destroy(k);
    if (rc != TLY_OK) {
        fprintf(stderr, "tally %s: %s\n", cmd, err);
        return 1;
    }
    for (size_t i = 0; i < tly_kube_capture_nabsent(*out); i++)
        fprintf(stderr, "note: the API server does not serve %s (its CRD is not installed); %s\n",
                tly_kube_capture_absent(*out, i), absent_tail);
    if (tly_kube_capture_crds_skipped(*out))
        fprintf(stderr, "note: objects are not checked against their CustomResourceDefinitions: %s\n",
                tly_kube_capture_crds_skipped(*out));
    return 0;
}

int tly_cmd_live_load(const char *cmd, const tly_cmd_live *lv, tly_store *s, int64_t *clock,
                      int *errors)
{
    tly_kube_capture *c;
    *errors = 0;
    *clock = INT64_MIN;
    if (tly_cmd_live_capture(cmd, lv, "read as none", &c))
        return 1;
    *clock = tly_kube_capture_now(c);
    *errors = tly_kube_capture_load(c, s);
    tly_kube_capture_free(c);
    return 0;
}
