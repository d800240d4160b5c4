/*
** bench_json.c: decoding JSON, tally's native reader against libfyaml
** (`make bench`, issue 13).
**
**   bench-json FILE [REPS [MODE...]]
**                             CPU: for each mode (default all), the best and
**                             the median of REPS passes (default 5) over FILE
**                             in memory
**   bench-json --once MODE FILE
**                             one pass over the mapped FILE as the loader
**                             makes it, for /usr/bin/time's peak RSS
**
** Times are the process's CPU time (one core; the machine is shared, so
** wall time would count the other work too). The modes, each printed as a
** line "MODE: X MB/s best, Y MB/s median":
**   parse     bytes to trees: tly_json_stream() building every object's tree
**             (a List's items one at a time) and dropping it;
**   fy-parse  libfyaml's events in JSON mode, as the loader reads them, with
**             no tree at all (a lower bound for any libfyaml path);
**   load      the full load: the native path of tly_store_load_json(), every
**             kind's decoder, the store, tly_store_finish();
**   fy-load   the same through the loader's libfyaml path (tly_store_load_fy).
** With --once, parse and fy-parse give the mapped pages back every 1 MiB as
** the loader does, load is tly_store_load_path() and fy-load
** tly_store_load_file_fy(), so the peak RSS is the loader's.
*/
#include <fcntl.h>
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonread.h"
#include "tally/diag.h"
#include "tally/store.h"

#include "bench.h"

/* Seconds of CPU this process has used. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The input, and what of it the pass has given back. */
typedef struct {
    const char *buf;
    size_t len, released;
    bool release;
} input;

/* Gives back the mapped pages before pos, 1 MiB at a time (load.c's release_consumed). */
static void give_back(input *in, size_t pos)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    pos &= ~(page - 1);
    if (!in->release || pos < in->released + (1u << 20))
        return;
    madvise((void *)(in->buf + in->released), pos - in->released, MADV_DONTNEED);
    in->released = pos;
}

static void on_object(void *ctx, const tly_node *tree, size_t end)
{
    (void)tree;
    give_back(ctx, end);
}

static void on_error(void *ctx, uint32_t line, uint32_t col, const char *fmt, va_list ap)
{
    (void)ctx;
    fprintf(stderr, "bench-json: %u:%u: ", line, col);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    exit(1);
}

static void parse_native(input *in, const char *path)
{
    (void)path;
    tly_arena *doc = tly_arena_create(16 * 1024), *obj = tly_arena_create(64 * 1024);
    tly_jsink sink = {.ctx = in, .object = on_object, .error = on_error};
    tly_json_stream(in->buf, in->len, doc, obj, &sink);
    tly_arena_destroy(doc);
    tly_arena_destroy(obj);
}

static void parse_fy(input *in, const char *path)
{
    (void)path;
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_JSON_FORCE};
    struct fy_parser *fyp = fy_parser_create(&cfg);
    if (!fyp || fy_parser_set_string(fyp, in->buf, in->len) != 0)
        exit(1);
    struct fy_event *ev;
    while ((ev = fy_parser_parse(fyp)) != NULL) {
        const struct fy_mark *m = fy_event_start_mark(ev);
        if (m)
            give_back(in, m->input_pos);
        fy_parser_event_free(fyp, ev);
    }
    if (fy_parser_get_stream_error(fyp)) {
        fprintf(stderr, "bench-json: libfyaml reports a syntax error\n");
        exit(1);
    }
    fy_parser_destroy(fyp);
}

/* A full load; from the file (mapped and given back) when once, else from memory. */
static void load(input *in, const char *path, bool fy)
{
    tly_store *s = tly_store_create();
    if (in->release)
        fy ? tly_store_load_file_fy(s, path, true) : tly_store_load_path(s, path);
    else
        fy ? tly_store_load_fy(s, "bench.json", in->buf, in->len, true)
           : tly_store_load_json(s, "bench.json", in->buf, in->len);
    tly_store_finish(s);
    size_t errs = tly_diags_count_sev(tly_store_diags(s), TLY_SEV_ERROR);
    if (errs) {
        fprintf(stderr, "bench-json: the input has %zu errors\n", errs);
        tly_diags_print(stderr, tly_store_diags(s), TLY_SEV_ERROR);
        exit(1);
    }
    tly_store_destroy(s);
}

static void load_native(input *in, const char *path) { load(in, path, false); }
static void load_fy(input *in, const char *path) { load(in, path, true); }

static const struct {
    const char *name;
    void (*run)(input *in, const char *path);
} modes[] = {
    {"parse", parse_native},
    {"fy-parse", parse_fy},
    {"load", load_native},
    {"fy-load", load_fy},
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool wanted(const char *mode, char **only, int nonly)
{
    for (int i = 0; i < nonly; i++)
        if (strcmp(only[i], mode) == 0)
            return true;
    return nonly == 0;
}

/* REPS timed passes of the modes asked for (all when nonly is 0) over the file in memory. */
static void timed(const char *path, int reps, char **only, int nonly)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    rewind(f);
    char *buf = tly_xmalloc(len ? len : 1);
    if (fread(buf, 1, len, f) != len)
        exit(1);
    fclose(f);
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        if (!wanted(modes[m].name, only, nonly))
            continue;
        double mbs[64];
        for (int r = 0; r < reps; r++) {
            input in = {.buf = buf, .len = len};
            double t0 = cpu_s();
            modes[m].run(&in, path);
            mbs[r] = (double)len / 1e6 / (cpu_s() - t0);
        }
        qsort(mbs, (size_t)reps, sizeof *mbs, cmp_double);
        printf("%s: %.1f MB/s best, %.1f MB/s median (%zu bytes)\n", modes[m].name,
               mbs[reps - 1], mbs[reps / 2], len);
        fflush(stdout);
    }
    free(buf);
}

/* One pass of one mode over the mapped file. */
static void once(const char *mode, const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        perror(path);
        exit(1);
    }
    input in = {.len = (size_t)st.st_size, .release = true};
    in.buf = mmap(NULL, in.len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (in.buf == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    madvise((void *)in.buf, in.len, MADV_SEQUENTIAL);
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        if (strcmp(modes[m].name, mode) != 0)
            continue;
        double t0 = cpu_s();
        modes[m].run(&in, path);
        printf("%s: %.1f MB/s once\n", mode, (double)in.len / 1e6 / (cpu_s() - t0));
        munmap((void *)in.buf, in.len);
        return;
    }
    fprintf(stderr, "bench-json: unknown mode %s\n", mode);
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--once") == 0) {
        once(argv[2], argv[3]);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: bench-json FILE [REPS [MODE...]] | bench-json --once MODE FILE\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    timed(argv[1], reps < 1 ? 1 : reps > 64 ? 64 : reps, argv + 3, argc > 3 ? argc - 3 : 0);
    return 0;
}
