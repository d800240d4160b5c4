/*
** bench.h: what the benchmark programs share: a monotonic clock and loading
** a generated input into a store. Header-only, because each benchmark is one
** file built into its own executable.
*/
#ifndef TALLY_BENCH_H
#define TALLY_BENCH_H

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tally/diag.h"
#include "tally/store.h"

/* Seconds on the monotonic clock. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
** Bytes resident (/proc/self/statm): the heap and what pages.c maps for big
** arenas and tables, which mallinfo2 does not see. Huge pages count whole.
*/
static inline long long bench_resident(void)
{
    long long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%lld %lld", &size, &resident) != 2)
        resident = -1;
    if (f)
        fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* Heap bytes in use (glibc's mallinfo2, every arena): chunks handed out plus mmapped ones. */
static inline long long bench_heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (long long)(mi.uordblks + mi.hblkhd);
}

/*
** Loads the generated text (freed here) into a finished store; `name`
** picks the reader as a file name would (".json": the native JSON reader). A generator
** that writes an input with errors would measure the wrong thing, so the
** program stops with the errors printed.
*/
static inline tly_store *bench_load_as(const char *prog, const char *name, char *text, size_t len)
{
    tly_store *s = tly_store_create();
    tly_store_load_string(s, name, text, len);
    tly_store_finish(s);
    free(text);
    size_t errs = tly_diags_count_sev(tly_store_diags(s), TLY_SEV_ERROR);
    if (errs) {
        fprintf(stderr, "%s: the generated input has %zu errors\n", prog, errs);
        tly_diags_print(stderr, tly_store_diags(s), TLY_SEV_ERROR);
        exit(1);
    }
    return s;
}

/* The same for generated YAML. */
static inline tly_store *bench_load(const char *prog, char *text, size_t len)
{
    return bench_load_as(prog, "bench.yaml", text, len);
}

#endif
