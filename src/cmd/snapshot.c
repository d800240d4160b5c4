/*
** snapshot.c: `tally snapshot (--kubeconfig FILE [--context NAME] |
** --in-cluster) [-o FILE] [--anonymize]` (contract section 9).
**
** Lists every kind tally reads once (capture.h) and writes one `kind: List`
** JSON: items sorted by (apiVersion, kind, namespace, name), apiVersion and
** kind filled in, managedFields dropped, and a top-level `now`, the capture
** time, that every command reads as --now unless one is given. `tally
** simulate FILE` on it prints what `tally simulate --kubeconfig` printed at
** that moment. --anonymize renames every string that carries no accounting
** meaning (anonymize.h) so the file can be shared.
**
** With -o the file is written next to its destination and renamed into
** place, so a reader never sees half a snapshot.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "live.h"
#include "tally/arena.h"
#include "tally/capture.h"
#include "tally/error.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tally snapshot (--kubeconfig FILE [--context NAME] | --in-cluster) [-o FILE] "
            "[--anonymize]\n\n"
            "Writes every object tally reads from the API server as one kind: List JSON, with\n"
            "the capture time as `now`. `tally simulate FILE` on it gives what `tally simulate\n"
            "--kubeconfig` gave at that moment.\n\n"
            "  -o FILE                write to FILE (default: stdout)\n"
            "  --anonymize            rename every string that carries no accounting meaning,\n"
            "                         consistently and keeping their order (docs/live.md)\n" TLY_CMD_LIVE_HELP);
}

static int write_out(const tly_kube_capture *c, const char *path, bool anonymize)
{
    (void)anonymize;
    FILE *out = stdout;
    char *tmp = NULL;
    if (path && strcmp(path, "-")) {
        tmp = tly_xasprintf("%s.tmp.%ld", path, (long)getpid());
        out = fopen(tmp, "w");
        if (!out) {
            fprintf(stderr, "tally snapshot: cannot write %s: %s\n", tmp, strerror(errno));
            free(tmp);
            return 1;
        }
    }
    tly_kube_capture_write(c, out, NULL, NULL);
    int rc = 0;
    if (fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, "tally snapshot: writing %s failed: %s\n", tmp ? tmp : "stdout",
                strerror(errno));
        rc = 1;
    }
    if (tmp) {
        if (fclose(out) != 0 && !rc) {
            fprintf(stderr, "tally snapshot: writing %s failed: %s\n", tmp, strerror(errno));
            rc = 1;
        }
        if (!rc && rename(tmp, path) != 0) {
            fprintf(stderr, "tally snapshot: cannot rename %s to %s: %s\n", tmp, path,
                    strerror(errno));
            rc = 1;
        }
        if (rc)
            unlink(tmp);
        free(tmp);
    }
    return rc;
}

int tly_cmd_snapshot(int argc, char **argv)
{
    tly_cmd_live lv;
    tly_cmd_live_init(&lv);
    const char *path = NULL;
    bool anonymize = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int lr = tly_cmd_live_option(argc, argv, &i, "snapshot", &lv);
        if (lr < 0)
            return 2;
        if (lr > 0)
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) {
            path = argv[++i];
        } else if (!strncmp(a, "--output=", 9)) {
            path = a + 9;
        } else if (!strcmp(a, "--anonymize")) {
            fprintf(stderr, "tally snapshot: --anonymize is not built yet\n");
            return 2;
        } else {
            fprintf(stderr, "tally snapshot: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!lv.set) {
        fprintf(stderr, "tally snapshot: a live source is required (--kubeconfig FILE, "
                        "--context NAME or --in-cluster)\n");
        usage(stderr);
        return 2;
    }
    tly_kube_capture *c;
    if (tly_cmd_live_capture("snapshot", &lv, "the snapshot has none", &c))
        return 1;
    int rc = write_out(c, path, anonymize);
    tly_kube_capture_free(c);
    return rc;
}
