/*
** pages.h: large allocations straight from the kernel, on huge pages.
**
** A store of 100,000 pods is tens of megabytes that are written once, in
** order, while the file is read. Taken from malloc in 4 KiB pages, each
** page is one page fault the first time it is written: 11,900 faults for a
** 20,000-pod file, a third of the load's time on this paravirtualised
** kernel, plus the TLB misses of reading the store afterwards. Memory from
** tly_pages_alloc() is mapped at a 2 MiB boundary in whole 2 MiB pieces and
** marked MADV_HUGEPAGE, so a transparent huge page backs each piece when
** the kernel has one (THP "madvise" mode, Debian's default) and one fault
** maps 2 MiB. Where THP is off it is ordinary memory.
**
** Only large, long-lived pieces belong here (arena blocks of a store);
** what is not touched costs nothing, but a touched piece is resident in
** whole when it is a huge page.
*/
#ifndef TALLY_PAGES_H
#define TALLY_PAGES_H

#include <stddef.h>

/* The unit: sizes are rounded up to it, and pieces start at a multiple of it. */
#define TLY_PAGES_UNIT ((size_t)2 << 20)

/* size rounded up to a whole number of units. */
static inline size_t tly_pages_round(size_t size)
{
    return (size + TLY_PAGES_UNIT - 1) & ~(TLY_PAGES_UNIT - 1);
}

/*
** size bytes (a multiple of TLY_PAGES_UNIT, not 0), zeroed, aligned to
** TLY_PAGES_UNIT; exits with tly_oom() when the kernel has none.
*/
void *tly_pages_alloc(size_t size);

/* Gives back what tly_pages_alloc(size) returned. */
void tly_pages_free(void *p, size_t size);

#endif
