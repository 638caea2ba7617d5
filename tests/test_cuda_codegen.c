/* test_cuda_codegen.c — the CUDA emitter's code compiles with NVRTC for
 * sm_80 and sm_90 (no GPU needed): every element-wise op the code generators
 * take, in every compute type they take it in, plus casts, generators,
 * broadcast and scalar parameters, views read through index maps (offsets,
 * negative strides, wraps with shifts, clamps), every reduction and the
 * reductions along an axis (fused, through views); and a source NVRTC
 * rejects gives its log, not a crash.  (test_cuda_on_host.c runs the
 * kernels.) */
#include "cuda_test_kernels.h"

#include "jit/cache/diskcache.h"
#include "exec/cuda/nvrtc.h"

/* Every kernel of the list compiled in one NVRTC program per architecture. */
static void compile_all(const kernel_list *l, const char *what)
{
    char *src = emit_all(l);
    static const int archs[] = {80, 90};
    for (int a = 0; a < 2; a++) {
        void *image = NULL;
        size_t size = 0;
        static char log[1 << 16];
        bool ok = pe_nvrtc_compile(src, "test.cu", archs[a], false, &image, &size, log, sizeof log);
        if (!ok) fprintf(stderr, "%s for sm_%d:\n%s\n", what, archs[a], log);
        assert_true(ok);
        assert_true(size > 1000);
        free(image);
    }
    printf("%s: %zu kernels compiled for sm_80 and sm_90\n", what, l->n);
    free(src);
}

static void test_every_map_op_compiles(void **state)
{
    (void)state;
    kernel_list l = map_kernels();
    assert_true(l.n > 150);
    compile_all(&l, "element-wise ops");
    free(l.k);
}

/* Complex values as pairs of reals (kir_complex.c): every op that takes
 * them, in c64 and c128, casts, pe_complex, cond. */
static void test_complex_ops_compile(void **state)
{
    (void)state;
    kernel_list l = complex_kernels();
    assert_true(l.n > 50);
    compile_all(&l, "complex ops");
    free(l.k);
}

/* A complex prod's two real reductions (|z|'s product, arg z's sum) over
 * c64 and c128 operands, lowered (record.c's record_complex_prod). */
static void test_complex_prod_reductions_compile(void **state)
{
    (void)state;
    kernel_list l = complex_prod_kernels();
    assert_int_equal(l.n, 4);
    for (size_t c = 0; c < l.n; c++) {
        assert_true(kir_valid(&l.k[c]));
        kir_kernel *lowered = lowered_copy(&l.k[c]);
        assert_true(!kir_has_complex(lowered) && pe_kernel_generatable(lowered, pe_cuda_can_emit));
        free(lowered);
    }
    compile_all(&l, "complex prod's reductions");
    free(l.k);
}

static void test_reductions_broadcast_scalars_generators_compile(void **state)
{
    (void)state;
    kernel_list l = reduction_kernels();
    /* every full reduction in every compute type the CUDA generator takes it in
     * (the folded ones too: products, wrapping sums, any, all, argmax, argmin) */
    for (int op = 0; op < PE_OP__COUNT; op++)
        for (pe_dtype ct = PE_F32; ct <= PE_BOOL; ct++)
            if (pe_op_table[op].kind == PE_KIND_REDUCE && pe_cuda_can_emit((pe_op)op, ct, PE_F64, ct))
                add(&l, plain_reduction_kernel((pe_op)op, ct, 70000));
    /* a 2-D broadcast operand (a row), a scalar parameter, index and identity generators */
    kir_kernel k = {0};
    k.rank = 2, k.shape[0] = 300, k.shape[1] = 7;
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_STRIDED, .dtype = PE_F32, .stride = {0, 1}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_SCALAR, .dtype = PE_F32};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {0}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_mul, .dtype = PE_F32, .ctype = PE_F32, .n = 2, .a = {0, 1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_index, .dtype = PE_I32, .ctype = PE_I32, .n = 0, .a = {1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_identity, .dtype = PE_F32, .ctype = PE_F32, .n = 0};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_add, .dtype = PE_F32, .ctype = PE_F32, .n = 2, .a = {2, 3}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_add, .dtype = PE_F32, .ctype = PE_F32, .n = 2, .a = {5, 4}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_F32};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {2, 6}};
    add(&l, k);
    /* literals compiled in (pecc's source literals), bit-exact: NaN, -0, infinities, i32 */
    static const double literals[] = {0.5, -0.0, __builtin_inf(), __builtin_nan(""), 1e300};
    for (int d = 0; d < 3; d++) {
        pe_dtype t = d == 0 ? PE_F32 : d == 1 ? PE_F64 : PE_I32;
        for (size_t v = 0; v < sizeof literals / sizeof *literals; v++) {
            kir_kernel lk = map_kernel(PE_OP_add, t, 2);
            lk.params[1] = (kir_param){.kind = KIR_IN_LITERAL, .dtype = t, .value = t == PE_I32 ? 7 : literals[v]};
            add(&l, lk);
            if (t == PE_I32) break;
        }
    }
    /* views through index maps (cuda_test_kernels.h), and a sum over the reversed one */
    for (size_t v = 0; v < sizeof view_cases / sizeof *view_cases; v++) add(&l, view_kernel(&view_cases[v]));
    kir_kernel vs = view_kernel(&view_cases[1]);
    vs.params[2] = (kir_param){.kind = KIR_OUT_PARTIAL, .dtype = PE_F64};
    vs.body[3] = (kir_inst){.kind = KIR_REDUCE, .op = PE_OP_sum, .dtype = PE_F64, .ctype = PE_F32, .n = 2, .a = {2, 2}};
    add(&l, vs);
    add(&l, concat_kernel());
    add(&l, gather_kernel());
    /* random draws (both generators, every dtype), stored and summed */
    for (size_t r = 0; r < sizeof random_cases / sizeof *random_cases; r++) {
        kir_kernel rk = random_kernel(&random_cases[r], false);
        assert_true(kir_valid(&rk));
        add(&l, rk);
        if (random_cases[r].t != PE_I32) add(&l, random_kernel(&random_cases[r], true));
    }
    compile_all(&l, "reductions, broadcast, views, concat, gather, random draws, scalars, literals, generators");
    free(l.k);
}

/* Reductions along an axis: every one the generator emits, in each type,
 * along a last axis (a warp per result) and an outer one (a thread per
 * result), along a middle axis of rank 4 and an empty axis; fused with
 * producers (exp(x) * 2 with a literal, exp(x) stored); through every view
 * case's index map along each axis. */
static void test_axis_reductions_compile(void **state)
{
    (void)state;
    kernel_list l = {0};
    const kir_param contig = {.kind = KIR_IN_CONTIG};
    static const struct {
        int shape;
        int axis;
    } picks[] = {{2, 0}, {2, 1}, {7, 2}, {3, 1}};
    for (size_t p = 0; p < sizeof picks / sizeof *picks; p++) {
        const axis_shape *sh = &axis_shapes[picks[p].shape];
        for (size_t r = 0; r < sizeof axis_reductions / sizeof *axis_reductions; r++) {
            const axis_reduction *ar = &axis_reductions[r];
            add(&l, axis_kernel(ar->op, ar->ct, ar->rt, sh->rank, sh->shape, picks[p].axis, contig, false));
        }
        add(&l, axis_kernel(PE_OP_sum, PE_F32, PE_F32, sh->rank, sh->shape, picks[p].axis, contig, true));
        add(&l, axis_kernel(PE_OP_var, PE_F32, PE_F32, sh->rank, sh->shape, picks[p].axis, contig, true));
    }
    for (size_t v = 0; v < sizeof view_cases / sizeof *view_cases; v++)
        for (int axis = 0; axis < view_cases[v].rank; axis++)
            add(&l, axis_kernel(axis ? PE_OP_argmax : PE_OP_mean, PE_F64, axis ? PE_I32 : PE_F64, view_cases[v].rank,
                                view_cases[v].shape, axis, view_cases[v].map, axis == 1));
    for (size_t i = 0; i < l.n; i++) assert_true(kir_valid(&l.k[i]));
    compile_all(&l, "axis reductions");
    free(l.k);
}

static int occurrences(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

/* f32 cdf_norm(x) and cdf_norm(-x) in one kernel compute the tail of |x|
 * once (Black-Scholes' N(d), N(-d)); cdf_norm of another value gets its own. */
static void test_cdf_norm_of_x_and_minus_x_share_the_tail(void **state)
{
    (void)state;
    kir_kernel k = cdf_pair_kernel();
    char *src = emit_one(&k);
    assert_int_equal(occurrences(src, "= pe_cdf_tail_f32("), 2); /* |x| once, exp(x) once */
    void *image = NULL;
    size_t size = 0;
    char log[8192];
    bool ok = pe_nvrtc_compile(src, "cdf.cu", 90, false, &image, &size, log, sizeof log);
    if (!ok) fprintf(stderr, "%s\n", log);
    assert_true(ok);
    free(src), free(image);
}

static void test_rejected_source_gives_the_log(void **state)
{
    (void)state;
    void *image = (void *)1;
    size_t size = 1;
    char log[4096];
    bool ok = pe_nvrtc_compile("extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", 80, false, &image,
                               &size, log, sizeof log);
    assert_false(ok);
    assert_null(image);
    assert_int_equal(size, 0);
    assert_non_null(strstr(log, "undefined_thing"));
}

/* Cubins in the disk cache: a round trip, and a corrupt file is refused and
 * removed (the kernel is then recompiled). */
static void test_cubins_in_the_disk_cache(void **state)
{
    (void)state;
    char dir[] = "/tmp/pe-test-cubin-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_true(pe_diskcache_open(dir, "x86-64-v3"));
    kir_kernel k = map_kernel(PE_OP_exp, PE_F32, 1), other = map_kernel(PE_OP_log, PE_F32, 1);
    const kir_kernel *ks[] = {&k, &other};
    char *src = pe_cuda_emit(ks, 2);
    void *cubin = NULL;
    size_t size = 0;
    char log[4096];
    assert_true(pe_nvrtc_compile(src, "k.cu", 90, false, &cubin, &size, log, sizeof log));
    pe_diskcache_store_blob(ks, 2, "sm_90-test", cubin, size);
    for (int i = 0; i < 2; i++) { /* under both kernels' names */
        size_t got_size = 0;
        void *got = pe_diskcache_load_blob(ks[i], "sm_90-test", &got_size);
        assert_non_null(got);
        assert_int_equal(got_size, size);
        assert_memory_equal(got, cubin, size);
        free(got);
    }
    size_t n = 0;
    assert_null(pe_diskcache_load_blob(&k, "sm_80-test", &n)); /* another architecture: not there */
    /* flip one byte of the file filed under k (and, linked, under other) */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "f=$(ls %s/%016llx-*.bin) && printf 'X' | dd of=$f bs=1 seek=100 conv=notrunc status=none", dir,
             (unsigned long long)kir_hash(&k));
    assert_int_equal(system(cmd), 0);
    tu_errors_clear();
    assert_null(pe_diskcache_load_blob(&k, "sm_90-test", &n));
    snprintf(cmd, sizeof cmd, "ls %s/%016llx-*.bin >/dev/null 2>&1", dir, (unsigned long long)kir_hash(&k));
    assert_true(system(cmd) != 0); /* removed */
    assert_null(pe_diskcache_load_blob(&other, "sm_90-test", &n)); /* the same file (a hard link): refused too */
    pe_diskcache_close();
    free(src), free(cubin);
    tu_remove_dir(dir);
}

int main(void)
{
    const char *why;
    if (!pe_nvrtc_available(&why)) {
        fprintf(stderr, "skipped: %s\n", why);
        return 77;
    }
    printf("NVRTC %d.%d\n", pe_nvrtc_version() / 1000, pe_nvrtc_version() % 1000 / 10);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_map_op_compiles),
        cmocka_unit_test(test_complex_ops_compile),
        cmocka_unit_test(test_complex_prod_reductions_compile),
        cmocka_unit_test(test_reductions_broadcast_scalars_generators_compile),
        cmocka_unit_test(test_axis_reductions_compile),
        cmocka_unit_test(test_cdf_norm_of_x_and_minus_x_share_the_tail),
        cmocka_unit_test(test_rejected_source_gives_the_log),
        cmocka_unit_test(test_cubins_in_the_disk_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
