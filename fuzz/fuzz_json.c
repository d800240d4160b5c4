/*
** fuzz_json.c: libFuzzer target for the native JSON reader (jsonparse.c),
** differential: every input goes through tly_parse_value() and through the
** libfyaml path (tly_parse_value_fy), and the two trees must be equal
** (types, texts, keys, columns; lines unless the input has a CR) whenever
** both accept. When only the native reader accepts, the input must agree
** with libfyaml once its tabs between tokens are spaces (libfyaml refuses
** some tabs that JSON allows). Failures abort with both trees' first
** difference. Also: crashes, sanitizer reports and leaks, as everywhere.
*/
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../tests/jsondiff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    char why[512];
    bool tabs;
    /* -1 (only libfyaml accepts) is a YAML form the strict reader refuses: fine. */
    if (jsondiff_compare((const char *)data, size, why, sizeof why, &tabs) == -2) {
        fprintf(stderr, "the readers disagree: %s\n", why);
        abort();
    }
    return 0;
}
