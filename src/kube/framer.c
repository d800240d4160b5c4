/*
** framer.c: cutting a stream of JSON values into whole values (kube.h).
**
** A watch body is a sequence of JSON objects, one per event; the API server
** happens to end each with a newline, but nothing promises that, and curl
** hands over the bytes in pieces that start and end anywhere. The framer
** follows just enough of JSON to know where a value ends: strings (with
** their escapes, so a brace inside a string is not a brace) and the depth
** of objects and arrays. Only the bytes of the value being read are kept,
** so memory follows the largest event, not the stream.
*/
#include <stdlib.h>
#include <string.h>

#include "kube_int.h"
#include "tally/arena.h"
#include "tally/error.h"

struct tly_jframer {
    char *buf;
    size_t len, cap, max;
    uint32_t depth;
    bool in_string, escape;
};

tly_jframer *tly_jframer_create(size_t max_value)
{
    tly_jframer *f = tly_xcalloc(1, sizeof *f);
    f->max = max_value ? max_value : (64u << 20);
    return f;
}

void tly_jframer_destroy(tly_jframer *f)
{
    if (!f)
        return;
    free(f->buf);
    free(f);
}

size_t tly_jframer_pending(const tly_jframer *f) { return f->len; }

static int keep(tly_jframer *f, const char *p, size_t n)
{
    if (f->len + n > f->max)
        return TLY_ELIMIT;
    if (f->len + n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap : 4096;
        while (cap < f->len + n + 1)
            cap *= 2;
        f->buf = tly_xrealloc(f->buf, cap);
        f->cap = cap;
    }
    memcpy(f->buf + f->len, p, n);
    f->len += n;
    f->buf[f->len] = '\0';
    return TLY_OK;
}

/*
** Scans data from i while inside a value; returns the offset just past the
** value's last byte, or len when the value goes on.
*/
static size_t scan(tly_jframer *f, const char *data, size_t i, size_t len)
{
    while (i < len) {
        char c = data[i];
        if (f->in_string) {
            if (f->escape) {
                f->escape = false;
            } else if (c == '\\') {
                f->escape = true;
            } else if (c == '"') {
                f->in_string = false;
            } else {
                /* Runs of plain string bytes are skipped at once. */
                const char *q = data + i + 1, *end = data + len;
                while (q < end && *q != '"' && *q != '\\')
                    q++;
                i = (size_t)(q - data);
                continue;
            }
        } else if (c == '"') {
            f->in_string = true;
        } else if (c == '{' || c == '[') {
            f->depth++;
        } else if (c == '}' || c == ']') {
            if (--f->depth == 0)
                return i + 1;
        }
        i++;
    }
    return len;
}

int tly_jframer_feed(tly_jframer *f, const char *data, size_t len,
                     int (*fn)(void *ctx, const char *value, size_t len), void *ctx)
{
    size_t i = 0;
    while (i < len) {
        if (f->depth == 0) {
            char c = data[i];
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                i++;
                continue;
            }
            if (c != '{' && c != '[')
                return TLY_EINVAL;
        }
        size_t start = i, end = scan(f, data, i, len);
        bool whole = f->depth == 0;
        if (whole && f->len == 0) {
            /* The value is inside this piece: no copy. */
            int rc = fn(ctx, data + start, end - start);
            if (rc)
                return rc;
        } else {
            int rc = keep(f, data + start, end - start);
            if (rc != TLY_OK)
                return rc;
            if (whole) {
                rc = fn(ctx, f->buf, f->len);
                f->len = 0;
                if (rc)
                    return rc;
            }
        }
        i = end;
    }
    return TLY_OK;
}
