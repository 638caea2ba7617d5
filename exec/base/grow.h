/* grow.h — the one growable array of the runtime (and of pecc): an array
 * with a count and a capacity that doubles (from 16) as items are added.
 *
 *     if (!PE_GROW(list->items, list->cap, list->n + 1)) return false;
 *     list->items[list->n++] = item;
 *
 * PE_GROW makes room for `need` items: true, or false when out of memory
 * (or the byte count would overflow), the array and its capacity then
 * untouched.  The capacity is a size_t or a uint32_t. */
#ifndef PE_BASE_GROW_H
#define PE_BASE_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The new capacity for `need` items of `size` bytes, or 0 when it would
 * not fit in `limit` items. */
static inline size_t pe_grow_capacity(size_t cap, size_t first, size_t need, size_t size, size_t limit)
{
    if (need > limit || need > SIZE_MAX / size) return 0;
    size_t n = cap ? cap : first;
    while (n < need) n = n <= limit / 2 ? n * 2 : limit;
    return n <= SIZE_MAX / size ? n : need;
}

static inline bool pe_grow_to(void **items, size_t cap, size_t first, size_t need, size_t size, size_t limit,
                              size_t *new_cap)
{
    size_t n = pe_grow_capacity(cap, first, need, size, limit);
    void *p = n ? realloc(*items, n * size) : NULL;
    if (!p) return false;
    *items = p;
    *new_cap = n;
    return true;
}

/* The slow path, out of line: call sites stay a comparison. */
__attribute__((noinline, unused)) static bool pe_grow_size(void **items, size_t *cap, size_t first, size_t need, size_t size)
{
    return need <= *cap || pe_grow_to(items, *cap, first, need, size, SIZE_MAX, cap);
}

__attribute__((noinline, unused)) static bool pe_grow_u32(void **items, uint32_t *cap, size_t first, size_t need, size_t size)
{
    size_t n;
    if (need <= *cap) return true;
    if (!pe_grow_to(items, *cap, first, need, size, UINT32_MAX, &n)) return false;
    *cap = (uint32_t)n;
    return true;
}

/* The common case (room already) costs one comparison: the array is
 * touched only when it grows.  PE_GROW_FROM gives the first capacity (an
 * array made anew per batch starts where a batch usually ends). */
#define PE_GROW(arr, cap, need) PE_GROW_FROM(arr, cap, need, 16)
#define PE_GROW_FROM(arr, cap, need, first)                                                                        \
    __extension__({                                                                                                \
        size_t pe_grow_need_ = (need);                                                                             \
        bool pe_grow_ok_ = pe_grow_need_ <= (cap);                                                                 \
        if (!pe_grow_ok_) {                                                                                        \
            void *pe_grow_items_ = (arr);                                                                          \
            pe_grow_ok_ = _Generic(&(cap), size_t *: pe_grow_size, uint32_t *: pe_grow_u32)(                       \
                &pe_grow_items_, &(cap), (first), pe_grow_need_, sizeof *(arr));                                   \
            (arr) = pe_grow_items_;                                                                                \
        }                                                                                                          \
        pe_grow_ok_;                                                                                               \
    })

#endif
