/*
** admit.c: `tally admit [PATH...] < review.json` (contract section 5).
**
** Reads one admission.k8s.io/v1 AdmissionReview on stdin, decides it
** against the state in PATH... (admit.h) and writes the AdmissionReview
** response on stdout. Exit 0 when a response was written, 1 when stdin is
** not a readable AdmissionReview, 2 for a usage error.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common.h"
#include "tally/admit.h"

/* Webhook bodies are small; a larger one is refused rather than buffered. */
#define MAX_REVIEW_BYTES (16u << 20)

static void usage(FILE *out)
{
    fprintf(out, "usage: tally admit [PATH...] < review.json\n\n"
                 "Decides one admission.k8s.io/v1 AdmissionReview (stdin) against the objects in\n"
                 "PATH... and prints the AdmissionReview response.\n");
}

int tly_cmd_admit(int argc, char **argv)
{
    int first = tly_cmd_paths_start(argc, argv, "admit", usage);
    if (first < 0)
        return first == TLY_CMD_HELP ? 0 : 2;
    size_t cap = 64 * 1024, len = 0;
    char *body = malloc(cap);
    if (!body)
        return 1;
    for (;;) {
        if (len == cap) {
            if (cap >= MAX_REVIEW_BYTES) {
                fprintf(stderr, "tally admit: stdin is larger than %u bytes\n", MAX_REVIEW_BYTES);
                free(body);
                return 1;
            }
            cap *= 2;
            char *nb = realloc(body, cap);
            if (!nb) {
                free(body);
                return 1;
            }
            body = nb;
        }
        size_t n = fread(body + len, 1, cap - len, stdin);
        if (n == 0)
            break;
        len += n;
    }
    int errors = 0;
    tly_store *s = tly_cmd_load(argc - first, argv + first, NULL, &errors);
    tly_cmd_print_sev(s, TLY_SEV_ERROR);
    tly_admit_result res;
    char err[256];
    int rc = tly_admit_review(s, body, len, &res, err, sizeof err);
    free(body);
    if (rc != 0) {
        fprintf(stderr, "tally admit: %s\n", err);
        tly_store_destroy(s);
        return 1;
    }
    tly_admit_write_response(stdout, &res, true);
    tly_admit_result_free(&res);
    tly_store_destroy(s);
    return 0;
}
