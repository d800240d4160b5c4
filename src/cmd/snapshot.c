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
** meaning, consistently and keeping byte order (anonymize.h, docs/anonymize.md),
** so the file can be shared; --anonymize-map FILE writes the mapping, which
** stays with the sender.
**
** With -o the file is written next to its destination and renamed into
** place, so a reader never sees half a snapshot; the map likewise.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anonymize_int.h"
#include "cmd.h"
#include "live.h"
#include "tally/anonymize.h"
#include "tally/arena.h"
#include "tally/capture.h"
#include "tally/error.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tally snapshot (--kubeconfig FILE [--context NAME] | --in-cluster) [-o FILE] "
            "[--anonymize [--anonymize-map FILE]]\n\n"
            "Writes every object tally reads from the API server as one kind: List JSON, with\n"
            "the capture time as `now`. `tally simulate FILE` on it gives what `tally simulate\n"
            "--kubeconfig` gave at that moment.\n\n"
            "  -o FILE                write to FILE (default: stdout)\n"
            "  --anonymize            rename every string that carries no accounting meaning,\n"
            "                         consistently and keeping their order (docs/anonymize.md)\n"
            "  --anonymize-map FILE   with --anonymize: write the mapping {\"original\": \"token\"}\n"
            "                         to FILE; it undoes the anonymization: keep it, never send it\n"
            "                         along with the snapshot\n" TLY_CMD_LIVE_HELP);
}

typedef void (*writer_fn)(FILE *out, const void *ctx);

/* Writes through fn to path (stdout for NULL or "-"), via a temporary file renamed into place. */
static int write_atomic(const char *path, writer_fn fn, const void *ctx)
{
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
    fn(out, ctx);
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

typedef struct {
    const tly_kube_capture *c;
    tly_anonymizer *an;    /* NULL: written as listed */
} snapshot_out;

static void write_snapshot(FILE *out, const void *ctx)
{
    const snapshot_out *so = ctx;
    tly_kube_capture_write(so->c, out, so->an ? tly_anonymizer_rename : NULL, so->an);
}

static void write_map(FILE *out, const void *ctx)
{
    tly_anonymizer_write_map(ctx, out);
}

/* Pass 1 over every object, then every token (anonymize.h). */
static tly_anonymizer *anonymizer_for(const tly_kube_capture *c)
{
    tly_anonymizer *an = tly_anonymizer_create();
    tly_kube_capture_visit(c, tly_anonymizer_collect, an);
    tly_anonymizer_seal(an);
    tly_anon_stats st;
    tly_anonymizer_stats(an, &st);
    if (st.stuck)
        fprintf(stderr, "tally snapshot: %zu string(s) kept as they are: no token fits between "
                        "their kept neighbours in byte order (docs/anonymize.md)\n", st.stuck);
    return an;
}

static int write_out(const tly_kube_capture *c, const char *path, bool anonymize,
                     const char *map_path)
{
    snapshot_out so = {.c = c, .an = anonymize ? anonymizer_for(c) : NULL};
    int rc = write_atomic(path, write_snapshot, &so);
    if (!rc && map_path)
        rc = write_atomic(map_path, write_map, so.an);
    tly_anonymizer_destroy(so.an);
    return rc;
}

int tly_cmd_snapshot(int argc, char **argv)
{
    tly_cmd_live lv;
    tly_cmd_live_init(&lv);
    const char *path = NULL, *map_path = NULL;
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
            anonymize = true;
        } else if (!strcmp(a, "--anonymize-map") && i + 1 < argc) {
            map_path = argv[++i];
        } else if (!strncmp(a, "--anonymize-map=", 16)) {
            map_path = a + 16;
        } else {
            fprintf(stderr, "tally snapshot: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (map_path && !anonymize) {
        fprintf(stderr, "tally snapshot: --anonymize-map goes with --anonymize\n");
        return 2;
    }
    bool map_stdout = map_path && (!*map_path || !strcmp(map_path, "-"));
    if (map_stdout || (map_path && path && !strcmp(map_path, path))) {
        fprintf(stderr, "tally snapshot: --anonymize-map needs a file of its own (the map must "
                        "not travel with the snapshot)\n");
        return 2;
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
    int rc = write_out(c, path, anonymize, map_path);
    tly_kube_capture_free(c);
    return rc;
}
