/* laplacian_csr.h — the 5-point Laplacian of a g x g grid (zero on the
 * boundary) as CSR arrays, built as a C programmer would: 4 on the
 * diagonal, -1 for each neighbour inside the grid, in column order.  Shared
 * by examples/cg.c, bench/bench_intrinsics.c and tests/test_spmv.c. */
#ifndef PE_EXAMPLES_LAPLACIAN_CSR_H
#define PE_EXAMPLES_LAPLACIAN_CSR_H
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    int64_t n, nnz;   /* n x n, nnz entries */
    int32_t *row_ptr; /* n + 1 offsets */
    int32_t *col;     /* nnz columns */
    double *val;      /* nnz values */
} laplacian_csr;

/* 0, or -1 out of memory (nothing held). */
static inline int laplacian_csr_build(int64_t g, laplacian_csr *a)
{
    a->n = g * g, a->nnz = 0;
    a->row_ptr = malloc(sizeof *a->row_ptr * (size_t)(a->n + 1));
    a->col = malloc(sizeof *a->col * (size_t)(5 * a->n + 1));
    a->val = malloc(sizeof *a->val * (size_t)(5 * a->n + 1));
    if (!a->row_ptr || !a->col || !a->val) {
        free(a->row_ptr), free(a->col), free(a->val);
        return -1;
    }
    a->row_ptr[0] = 0;
    for (int64_t r = 0; r < g; r++)
        for (int64_t c = 0; c < g; c++) {
            int64_t i = r * g + c;
            const int64_t nb[5] = {r > 0 ? i - g : -1, c > 0 ? i - 1 : -1, i, c + 1 < g ? i + 1 : -1, r + 1 < g ? i + g : -1};
            for (int e = 0; e < 5; e++)
                if (nb[e] >= 0) a->col[a->nnz] = (int32_t)nb[e], a->val[a->nnz++] = nb[e] == i ? 4 : -1;
            a->row_ptr[i + 1] = (int32_t)a->nnz;
        }
    return 0;
}

static inline void laplacian_csr_free(laplacian_csr *a) { free(a->row_ptr), free(a->col), free(a->val); }
#endif
