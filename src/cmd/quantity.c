/*
** cmd/quantity.c: `tally quantity [--value|--milli] [QUANTITY...]`.
**
** The command-line face of quantity.h, meant both for people checking what
** Kubernetes makes of a quantity and for scripts comparing tally's output
** with upstream's. One output line per input: the canonical form, or with
** --value / --milli the integer Value() / MilliValue() rounded away from zero,
** or the word ERROR where the input does not parse (or, with --value and
** --milli, where the integer does not fit in 64 bits). A diagnostic for each
** ERROR goes to stderr, so stdout stays one line per input.
**
** Inputs are the arguments, or when there are none, the lines of stdin with
** only their line ending ("\n" or "\r\n") removed: no other trimming, since
** upstream rejects surrounding spaces and so must we.
**
** Option parsing is deliberately simple and predictable:
**  - "--value", "--milli", "--help" and "-h" are options anywhere before "--";
**  - every argument after "--" is a quantity;
**  - before "--", any other argument that starts with "--" is a usage error
**    (exit 2), but one that starts with a single '-' is a quantity, so that
**    `tally quantity -5m` prints -5m. No option has a one-dash form besides
**    -h, and "-h" is never a valid quantity, so nothing is ambiguous.
**
** Exit status: 0 if every line was a result, 1 if any line was ERROR (or
** stdin or stdout failed), 2 for a usage error (nothing is printed to stdout).
*/
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "tally/error.h"
#include "tally/quantity.h"

/* What to print for each quantity. */
typedef enum {
    TLY_QTY_SHOW_CANONICAL,
    TLY_QTY_SHOW_VALUE,
    TLY_QTY_SHOW_MILLI
} tly_qty_show;

static void tly_qty_cmd_usage(FILE *out)
{
    fputs("usage: tally quantity [--value|--milli] [--] [QUANTITY...]\n"
          "\n"
          "Prints the canonical form of each Kubernetes quantity, one per line, as\n"
          "Kubernetes prints it (1024Mi -> 1Gi, 0.5 -> 500m). With no QUANTITY, reads\n"
          "one quantity per line of standard input. A line that does not parse\n"
          "prints ERROR, and the exit status is then 1.\n"
          "\n"
          "options:\n"
          "  --value   print Value(): the integer value, rounded away from zero\n"
          "  --milli   print MilliValue(): the value in thousandths, rounded away from zero\n"
          "            (both print ERROR where the integer does not fit in 64 bits)\n"
          "  --        every later argument is a quantity, even one starting with '-'\n"
          "  -h, --help  show this help\n"
          "\n"
          "An argument starting with a single '-' (-5m) is a quantity.\n",
          out);
}

/* Prints s[0..len) to stderr in quotes, escaping bytes that are not printable. */
static void tly_qty_cmd_quote(const char *s, size_t len)
{
    size_t i, shown = len > 80 ? 80 : len;

    fputc('"', stderr);
    for (i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(stderr, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
    fputs(shown < len ? "\"..." : "\"", stderr);
}

/* Prints the result line for one input; returns false if it printed ERROR. */
static bool tly_qty_cmd_one(const char *s, size_t len, tly_qty_show show)
{
    char buf[TLY_QTY_BUFSZ];
    tly_qty q;
    int64_t v;
    int rc = tly_qty_parse(s, len, &q);

    if (rc != TLY_OK) {
        puts("ERROR");
        fputs("tally quantity: ", stderr);
        tly_qty_cmd_quote(s, len);
        if (rc == TLY_ERANGE)
            fputs(": out of range (tally holds magnitudes below about 1.7e29)\n", stderr);
        else
            fputs(": not a valid quantity\n", stderr);
        return false;
    }
    if (show == TLY_QTY_SHOW_CANONICAL) {
        tly_qty_format(q, buf, sizeof buf);
        puts(buf);
        return true;
    }
    rc = show == TLY_QTY_SHOW_VALUE ? tly_qty_value(q, &v) : tly_qty_milli(q, &v);
    if (rc != TLY_OK) {
        puts("ERROR");
        fputs("tally quantity: ", stderr);
        tly_qty_cmd_quote(s, len);
        fprintf(stderr, ": %s does not fit in 64 bits\n",
                show == TLY_QTY_SHOW_VALUE ? "the value" : "the milli-value");
        return false;
    }
    printf("%" PRId64 "\n", v);
    return true;
}

/* Runs every line of stdin through tly_qty_cmd_one; returns false on any ERROR. */
static bool tly_qty_cmd_stdin(tly_qty_show show, bool *io_failed)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    bool ok = true;

    while ((n = getline(&line, &cap, stdin)) != -1) {
        size_t len = (size_t)n;
        if (len > 0 && line[len - 1] == '\n') {
            len--;
            if (len > 0 && line[len - 1] == '\r')
                len--;
        }
        if (!tly_qty_cmd_one(line, len, show))
            ok = false;
    }
    if (ferror(stdin)) {
        fputs("tally quantity: error reading standard input\n", stderr);
        *io_failed = true;
    }
    free(line);
    return ok;
}

int tly_cmd_quantity(int argc, char **argv)
{
    tly_qty_show show = TLY_QTY_SHOW_CANONICAL;
    bool dashdash = false, ok = true, io_failed = false;
    int i, count = 0;

    /* First pass: options only, so a usage error prints nothing to stdout. */
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        tly_qty_show want;

        if (dashdash) {
            count++;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            dashdash = true;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            tly_qty_cmd_usage(stdout);
            return 0;
        }
        if (strcmp(a, "--value") == 0 || strcmp(a, "--milli") == 0) {
            want = a[2] == 'v' ? TLY_QTY_SHOW_VALUE : TLY_QTY_SHOW_MILLI;
            if (show != TLY_QTY_SHOW_CANONICAL && show != want) {
                fputs("tally quantity: --value and --milli cannot be combined\n", stderr);
                tly_qty_cmd_usage(stderr);
                return 2;
            }
            show = want;
            continue;
        }
        if (strncmp(a, "--", 2) == 0) {
            fprintf(stderr, "tally quantity: unknown option '%s'\n", a);
            tly_qty_cmd_usage(stderr);
            return 2;
        }
        count++;
    }

    if (count == 0) {
        ok = tly_qty_cmd_stdin(show, &io_failed);
    } else {
        dashdash = false;
        for (i = 1; i < argc; i++) {
            const char *a = argv[i];
            if (!dashdash && strcmp(a, "--") == 0) {
                dashdash = true;
                continue;
            }
            if (!dashdash && (strcmp(a, "--value") == 0 || strcmp(a, "--milli") == 0))
                continue;
            if (!tly_qty_cmd_one(a, strlen(a), show))
                ok = false;
        }
    }

    if (fflush(stdout) != 0 || ferror(stdout)) {
        fputs("tally quantity: error writing standard output\n", stderr);
        io_failed = true;
    }
    return ok && !io_failed ? 0 : 1;
}
