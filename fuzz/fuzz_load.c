/*
** fuzz_load.c: libFuzzer target for the input loader and the decoders
** (store.h, load.c, decode_*.c).
**
** One store per input: the bytes are loaded with tly_store_load_string() as
** YAML (name "fuzz.yaml") and again as JSON (name "fuzz.json"), so both
** libfyaml modes and every kind's decoder see the same text; then
** tly_store_finish() sorts, resolves duplicates and builds the indexes.
** The finished store is walked read-only (every object of every kind, the
** queue of every pod, the scheduler name and queue label key), every
** diagnostic is printed on its own and then all of them sorted, into
** /dev/null, which exercises the message formatting; then the store is
** destroyed.
**
** What counts as a failure: any crash, ASan report (overflow, use after
** free, double free), UBSan report, or leak (libFuzzer's -detect_leaks,
** on by default, reports memory still held after the store is destroyed),
** and a load call that reports a negative error count.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/diag.h"
#include "tally/objects.h"
#include "tally/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The sink for printed diagnostics, opened once and kept for the run. */
static FILE *sink(void)
{
    static FILE *f;
    if (!f) {
        f = fopen("/dev/null", "w");
        if (!f) {
            perror("fuzz_load: /dev/null");
            abort();
        }
    }
    return f;
}

/* Reads everything a finished store offers, so the indexes are exercised. */
static void walk(const tly_store *s)
{
    FILE *out = sink();
    for (int k = 0; k < TLY_K_COUNT; k++) {
        uint32_t n = tly_store_count(s, k);
        for (uint32_t i = 0; i < n; i++) {
            if (!tly_store_at(s, k, i))
                abort();
        }
    }
    uint32_t npods = tly_store_count(s, TLY_K_POD);
    for (uint32_t i = 0; i < npods; i++) {
        const tly_pod *p = tly_store_at(s, TLY_K_POD, i);
        const tly_podgroup *pg = NULL;
        const char *q = tly_store_pod_queue(s, p, &pg);
        fprintf(out, "%s %d\n", q ? q : "-", tly_store_is_tally_pod(s, p));
    }
    fprintf(out, "%s %s %d\n", tly_store_scheduler_name(s), tly_store_queue_label_key(s),
            tly_store_config(s) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private, exactly sized copy: an overread is an ASan report. */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);

    tly_store *s = tly_store_create();
    if (tly_store_load_string(s, "fuzz.yaml", text, size) < 0)
        abort();
    if (tly_store_load_string(s, "fuzz.json", text, size) < 0)
        abort();
    tly_store_finish(s);
    walk(s);

    FILE *out = sink();
    tly_diags *d = tly_store_diags(s);
    size_t n = tly_diags_count(d);
    for (size_t i = 0; i < n; i++)
        tly_diag_print(out, tly_diags_get(d, i));
    tly_diags_sort(d);
    tly_diags_print(out, d, TLY_SEV_NOTE);
    fflush(out);

    tly_store_destroy(s);
    free(text);
    return 0;
}
