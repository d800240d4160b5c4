/*
** fuzz_cel.c: libFuzzer target for the DRA CEL subset (dra.h): the input
** is a selector expression, compiled and evaluated against devices of a
** small fixed ResourceSlice (string, int, bool and version attributes,
** memory capacity). Any result is fine; crashes, sanitizer reports, leaks
** and hangs are not.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tally/dra.h"
#include "tally/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *slice_yaml =
    "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
    "spec:\n  driver: gpu.nvidia.com\n  nodeName: n1\n  pool: {name: n1}\n  devices:\n"
    "  - name: gpu-0\n    attributes: {productName: {string: GB200}, index: {int: 0}, "
    "mig: {bool: false}, driverVersion: {version: 1.2.3}}\n    capacity: {memory: {value: 80Gi}}\n"
    "  - name: gpu-1\n    attributes: {productName: {string: H100}, index: {int: 1}}\n"
    "    capacity: {memory: {value: 40Gi}}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tly_store *s;
    static tly_dra *d;
    if (!s) {
        s = tly_store_create();
        tly_store_load_string(s, "slice.yaml", slice_yaml, strlen(slice_yaml));
        tly_store_finish(s);
        d = tly_dra_create(s);
    }
    char *expr = malloc(size + 1);
    if (!expr)
        return 0;
    memcpy(expr, data, size);
    expr[size] = '\0';
    const tly_resource_slice *sl = tly_store_at(s, TLY_K_RESOURCE_SLICE, 0);
    for (uint32_t i = 0; sl && i < sl->ndevices; i++) {
        const char *why = NULL;
        int r = tly_dra_cel_eval(d, expr, sl->driver, &sl->devices[i], &why);
        if (r < -1 || r > 1 || (r == -1 && !why))
            abort();
    }
    free(expr);
    return 0;
}
