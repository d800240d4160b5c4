/*
** pages.c: large allocations straight from the kernel (see pages.h).
**
** mmap gives no alignment beyond 4 KiB, so a piece is mapped one unit
** larger than asked and the unaligned head and tail are unmapped again.
** MADV_HUGEPAGE is advice: when the kernel refuses it (THP compiled out or
** "never") the piece is still good memory, so its result is not checked.
*/
#include "pages.h"

#include <stdint.h>
#include <sys/mman.h>

#include "tally/arena.h"

void *tly_pages_alloc(size_t size)
{
    size_t span = size + TLY_PAGES_UNIT;
    if (size == 0 || span < size)
        tly_oom();
    unsigned char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    if (m == MAP_FAILED)
        tly_oom();
    uintptr_t start = ((uintptr_t)m + TLY_PAGES_UNIT - 1) & ~(uintptr_t)(TLY_PAGES_UNIT - 1);
    size_t head = start - (uintptr_t)m;
    if (head)
        munmap(m, head);
    if (span - head > size)
        munmap((void *)(start + size), span - head - size);
#ifdef MADV_HUGEPAGE
    madvise((void *)start, size, MADV_HUGEPAGE);
#endif
    return (void *)start;
}

void tly_pages_free(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}
