/*
** validate.c: `tally validate PATH...` (contract section 4).
**
** Loads the objects (the decoders apply the per-object schema rules), adds
** the cross-object rules with references to absent objects as warnings, and
** prints one line per problem on stdout sorted by path, line and column.
** Notes (unknown kinds skipped) go to stderr: they are not problems.
** Exit 1 if there was any error, else 0.
*/
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "common.h"
#include "tally/crd.h"
#include "tally/validate.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tally validate (PATH... | --kubeconfig FILE [--context NAME] | --in-cluster)\n\n"
            "Checks Kubernetes objects (files or directories of YAML/JSON) as the API server\n"
            "and tally's admission webhook would. One line per problem:\n"
            "  PATH:LINE:COL: error|warning: KIND NAME: FIELD: MESSAGE\n"
            "Exit status 1 if any error was found, else 0. Live objects are named by their\n"
            "API path, with 1:1 as line and column.\n\n" TLY_CMD_LIVE_HELP);
}

int tly_cmd_validate(int argc, char **argv)
{
    tly_cmd_input in = {0};
    tly_cmd_live_init(&in.live);
    /* Live flags lead (validate --kubeconfig F); the rest is PATH-only as before. */
    int i = 1, lr;
    while (i < argc && (lr = tly_cmd_live_option(argc, argv, &i, "validate", &in.live)) != 0) {
        if (lr < 0)
            return 2;
        i++;
    }
    int first = i;
    if (!in.live.set) {
        first = tly_cmd_paths_start(argc, argv, "validate", usage);
        if (first < 0)
            return first == TLY_CMD_HELP ? 0 : 2;
    }
    if ((first >= argc) == !in.live.set) {
        if (first < argc)
            fprintf(stderr, "tally validate: give PATH... or a live source (--kubeconfig, "
                            "--context, --in-cluster), not both\n");
        usage(stderr);
        return 2;
    }
    in.npaths = argc - first;
    in.paths = argv + first;
    int errors;
    in.crds = tly_crdset_create();
    tly_store *s = tly_cmd_load_input("validate", &in, NULL, &errors);
    if (!s) {
        tly_crdset_destroy(in.crds);
        return 1;
    }
    tly_diags *d = tly_store_diags(s);
    size_t decoded = tly_diags_count(d);
    tly_crdset_check(in.crds, d);
    tly_diags_drop_restated(d, decoded);
    tly_crdset_destroy(in.crds);
    tly_validate_store(s, d, false);
    tly_diags_sort(d);
    tly_cmd_print_sev(s, TLY_SEV_NOTE);
    tly_diags_print(stdout, d, TLY_SEV_WARNING);
    int rc = tly_diags_count_sev(d, TLY_SEV_ERROR) ? 1 : 0;
    tly_store_destroy(s);
    return rc;
}
