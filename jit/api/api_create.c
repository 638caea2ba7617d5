/* api_create.c — entry points that make arrays: from host data (copied or
 * adopted), uniform constants (pe_scalar, pe_fill, C-scalar operands),
 * complex constants (pe_fill_c, pe_scalar_c, complex C scalars) and
 * generators (pe_index, pe_identity). */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "../macro/macro.h"
#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/memory.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"
#include "../../exec/pool/threadpool.h"
#include "../../profiler/collect.h"

#define NO_SLOT UINT32_MAX

/* A READY data port holding `buf`; NO_SLOT after raising. */
static uint32_t make_data(const pe_site *s, const char *api, pe_dtype t, int rank, const int64_t *shape)
{
    uint32_t idx = pe_port_new();
    if (idx == NO_SLOT) {
        if (s) pe_raise(s, PE_E_NOMEM, api, "out of memory for the port table"); /* a C scalar: its op reports it */
        return NO_SLOT;
    }
    pe_port *p = pe_port_at(idx);
    p->op = PE_OP_data;
    p->dtype = p->ctype = (uint8_t)t;
    p->rank = (uint8_t)rank;
    for (int d = 0; d < rank; d++) p->shape[d] = shape[d];
    p->numel = pe_shape_numel(rank, shape);
    p->site = s;
    p->state = PE_PORT_READY;
    return idx;
}

static bool check_creation(const pe_site *s, const char *api, pe_dtype t, int rank, const int64_t *shape)
{
    if (!pe_require_init(s, api)) return false;
    pe_counters.ops_recorded++;
    return pe_check_dtype(s, api, t) && pe_check_shape(s, api, rank, shape);
}

/* pe_from_host and its shorthands (pe_f32_1d, ...): api is the call the
 * program made, which its errors name. */
static pe_array from_host(const pe_site *s, const char *api, pe_dtype t, int rank, const int64_t *shape,
                          const void *data)
{
    if (pe_macro_refuse_host(s, api)) return pe_invalid_result(s, PE_OP_data, PE_E_MACRO);
    if (!pe_rt.initialised) return pe_require_init(s, api), (pe_array){0};
    if (!check_creation(s, api, t, rank, shape)) return pe_invalid_result(s, PE_OP_data, pe_last_error()->code);
    int64_t n = pe_shape_numel(rank, shape);
    if (!data && n > 0) {
        pe_raise(s, PE_E_ARG, api, "data is NULL");
        return pe_invalid_result(s, PE_OP_data, PE_E_ARG);
    }
    size_t bytes = (size_t)n * pe_dtype_size(t);
    void *buf = pe_mem_alloc(bytes);
    if (!buf) {
        pe_raise(s, PE_E_NOMEM, api, "out of memory for %zu bytes", bytes);
        return pe_invalid_result(s, PE_OP_data, PE_E_NOMEM);
    }
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    if (bytes) pe_mem_copy(buf, data, bytes);
    if (t == PE_BOOL) /* normalise to 0/1 */
        for (size_t i = 0; i < bytes; i++) ((uint8_t *)buf)[i] = ((uint8_t *)buf)[i] != 0;
    uint32_t idx = make_data(s, api, t, rank, shape);
    if (idx == NO_SLOT) {
        pe_mem_free(buf, bytes);
        return (pe_array){0};
    }
    pe_port_at(idx)->buf = buf;
    if (pe_prof_on) pe_prof_call(s), pe_prof_io_at(s, PE_PROF_WRITE, bytes, t0, pe_prof_now());
    return pe_publish(idx);
}

pe_array pe_from_host_at(const pe_site *s, pe_dtype t, int rank, const int64_t *shape, const void *data)
{
    PE_API_GUARD;
    return from_host(PE_SITE_OR_CALLER(s), "pe_from_host", t, rank, shape, data);
}

pe_array pe_adopt_at(const pe_site *s, pe_dtype t, int rank, const int64_t *shape, void *data,
                     void (*free_fn)(void *, void *), void *ctx)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (pe_macro_refuse_host(s, "pe_adopt")) return pe_invalid_result(s, PE_OP_data, PE_E_MACRO);
    const char *api = "pe_adopt";
    if (!pe_rt.initialised) return pe_require_init(s, api), (pe_array){0};
    if (!check_creation(s, api, t, rank, shape)) return pe_invalid_result(s, PE_OP_data, pe_last_error()->code);
    if (!data) {
        pe_raise(s, PE_E_ARG, api, "data is NULL");
        return pe_invalid_result(s, PE_OP_data, PE_E_ARG);
    }
    if (!free_fn) {
        pe_raise(s, PE_E_ARG, api, "free_fn is NULL: the runtime must be able to give the buffer back");
        return pe_invalid_result(s, PE_OP_data, PE_E_ARG);
    }
    uint32_t idx = make_data(s, api, t, rank, shape);
    if (idx == NO_SLOT) return (pe_array){0};
    pe_port *p = pe_port_at(idx);
    p->buf = data;
    p->free_fn = free_fn;
    p->free_ctx = ctx;
    pe_mem_account((long long)((size_t)p->numel * pe_dtype_size(t)));
    if (pe_prof_on) { /* taken over, not copied: a write of no time */
        uint64_t now = pe_prof_now();
        pe_prof_call(s), pe_prof_io_at(s, PE_PROF_WRITE, (size_t)p->numel * pe_dtype_size(t), now, now);
    }
    return pe_publish(idx);
}

pe_array pe_f32_1d_at(const pe_site *s, const float *data, int64_t n)
{
    PE_API_GUARD;
    return from_host(PE_SITE_OR_CALLER(s), "pe_f32_1d", PE_F32, 1, &n, data);
}
pe_array pe_f64_1d_at(const pe_site *s, const double *data, int64_t n)
{
    PE_API_GUARD;
    return from_host(PE_SITE_OR_CALLER(s), "pe_f64_1d", PE_F64, 1, &n, data);
}
pe_array pe_f32_2d_at(const pe_site *s, const float *data, int64_t rows, int64_t cols)
{
    PE_API_GUARD;
    int64_t shape[2] = {rows, cols};
    return from_host(PE_SITE_OR_CALLER(s), "pe_f32_2d", PE_F32, 2, shape, data);
}
pe_array pe_f64_2d_at(const pe_site *s, const double *data, int64_t rows, int64_t cols)
{
    PE_API_GUARD;
    int64_t shape[2] = {rows, cols};
    return from_host(PE_SITE_OR_CALLER(s), "pe_f64_2d", PE_F64, 2, shape, data);
}

/* pe_fill and pe_scalar (api: the call the program made, which errors name). */
static pe_array fill(const pe_site *s, const char *api, pe_dtype t, int rank, const int64_t *shape, double v)
{
    if (!pe_rt.initialised) return pe_require_init(s, api), (pe_array){0};
    if (!check_creation(s, api, t, rank, shape)) return pe_invalid_result(s, PE_OP_constant, pe_last_error()->code);
    uint32_t idx = pe_make_constant(t, rank, shape, v, false, s);
    if (idx == NO_SLOT) {
        pe_raise(s, PE_E_NOMEM, api, "out of memory for the port table");
        return (pe_array){0};
    }
    if (pe_prof_on) pe_prof_call(s);
    return pe_publish(idx);
}

pe_array pe_fill_at(const pe_site *s, pe_dtype t, int rank, const int64_t *shape, double v)
{
    PE_API_GUARD;
    return fill(PE_SITE_OR_CALLER(s), "pe_fill", t, rank, shape, v);
}

pe_array pe_scalar_at(const pe_site *s, pe_dtype t, double v)
{
    PE_API_GUARD;
    return fill(PE_SITE_OR_CALLER(s), "pe_scalar", t, 0, NULL, v);
}

/* C-scalar operands: weakly typed 0-d constants that the consuming operation
 * releases.  Before pe_init (or during pe_shutdown) they give the null
 * handle quietly: the operation itself reports it, once. */
static pe_array weak_scalar(pe_dtype t, double v)
{
    PE_API_GUARD;
    if (!pe_rt.initialised || pe_rt.shutting_down) return (pe_array){0};
    uint32_t idx = pe_make_constant(t, 0, NULL, v, true, NULL);
    if (idx == NO_SLOT) return (pe_array){0};
    pe_port *p = pe_port_at(idx);
    p->temp = true;
    p->refs_app = 1;
    /* A C integer keeps its value exactly, even outside i32's range: the
     * operation it feeds decides what it becomes (pe_settle_wide_ints). */
    if (t == PE_I32) p->value = v;
    return pe_handle_of(idx);
}
pe_array pe__weak_f32(float v) { return weak_scalar(PE_F32, v); }
pe_array pe__weak_f64(double v) { return weak_scalar(PE_F64, v); }
pe_array pe__weak_int(long long v) { return weak_scalar(PE_I32, (double)v); }

/* Complex constants.  A uniform constant holds one double, so a complex
 * value with an imaginary part (a -0 one too) is a stored array of its
 * value, filled here; one without is a uniform constant like pe_fill's
 * (the interpreter reads it as value + 0i).  Either way the value is
 * rounded to t's parts. */
static bool has_imaginary_part(double im) { return im != 0 || signbit(im); }

static uint32_t make_complex_fill(const pe_site *s, const char *api, pe_dtype t, int rank, const int64_t *shape,
                                  double re, double im)
{
    int64_t n = pe_shape_numel(rank, shape);
    size_t bytes = (size_t)n * pe_dtype_size(t);
    void *buf = pe_mem_alloc(bytes ? bytes : 1);
    if (!buf) {
        if (s) pe_raise(s, PE_E_NOMEM, api, "out of memory for %zu bytes", bytes);
        return NO_SLOT;
    }
    for (int64_t i = 0; i < n; i++) { /* C99's layout: the real part, then the imaginary part */
        if (t == PE_C64) ((float *)buf)[2 * i] = (float)re, ((float *)buf)[2 * i + 1] = (float)im;
        else ((double *)buf)[2 * i] = re, ((double *)buf)[2 * i + 1] = im;
    }
    uint32_t idx = make_data(s, api, t, rank, shape);
    if (idx == NO_SLOT) {
        pe_mem_free(buf, bytes ? bytes : 1);
        return NO_SLOT;
    }
    pe_port_at(idx)->buf = buf;
    return idx;
}

/* pe_fill_c and pe_scalar_c. */
static pe_array fill_c(const pe_site *s, const char *api, pe_dtype t, int rank, const int64_t *shape, double re,
                       double im)
{
    if (!pe_rt.initialised) return pe_require_init(s, api), (pe_array){0};
    if (!check_creation(s, api, t, rank, shape)) return pe_invalid_result(s, PE_OP_constant, pe_last_error()->code);
    if (!pe_dtype_is_complex(t)) {
        pe_raise(s, PE_E_TYPE, api, "%s is not a complex dtype (PE_C64 or PE_C128)", pe_dtype_name(t));
        return pe_invalid_result(s, PE_OP_constant, PE_E_TYPE);
    }
    if (!has_imaginary_part(im)) return fill(s, api, t, rank, shape, re);
    if (pe_macro_refuse_host(s, api)) return pe_invalid_result(s, PE_OP_data, PE_E_MACRO);
    uint32_t idx = make_complex_fill(s, api, t, rank, shape, re, im);
    if (idx == NO_SLOT) return pe_invalid_result(s, PE_OP_data, PE_E_NOMEM);
    if (pe_prof_on) pe_prof_call(s);
    return pe_publish(idx);
}

pe_array pe_fill_c_at(const pe_site *s, pe_dtype t, int rank, const int64_t *shape, double re, double im)
{
    PE_API_GUARD;
    return fill_c(PE_SITE_OR_CALLER(s), "pe_fill_c", t, rank, shape, re, im);
}

pe_array pe_scalar_c_at(const pe_site *s, pe_dtype t, double re, double im)
{
    PE_API_GUARD;
    return fill_c(PE_SITE_OR_CALLER(s), "pe_scalar_c", t, 0, NULL, re, im);
}

/* A complex C scalar operand: weak like a real one (it takes the array
 * operand's precision: with f32, i32 or bool arrays c64, with f64 c128). */
static pe_array weak_complex(pe_dtype t, double re, double im)
{
    if (!has_imaginary_part(im)) return weak_scalar(t, re);
    PE_API_GUARD;
    if (!pe_rt.initialised || pe_rt.shutting_down) return (pe_array){0};
    uint32_t idx = make_complex_fill(NULL, "a complex C scalar", t, 0, NULL, re, im);
    if (idx == NO_SLOT) return (pe_array){0};
    pe_port *p = pe_port_at(idx);
    p->weak = p->temp = true;
    p->refs_app = 1;
    return pe_handle_of(idx);
}
pe_array pe__weak_c64(float _Complex v) { return weak_complex(PE_C64, crealf(v), cimagf(v)); }
pe_array pe__weak_c128(double _Complex v) { return weak_complex(PE_C128, creal(v), cimag(v)); }

pe_array pe_index_at(const pe_site *s, pe_dtype t, int rank, const int64_t *shape, int axis)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_index";
    if (!pe_rt.initialised) return pe_require_init(s, api), (pe_array){0};
    if (!check_creation(s, api, t, rank, shape)) return pe_invalid_result(s, PE_OP_index, pe_last_error()->code);
    if (!pe_normalise_axis(&axis, rank)) {
        pe_raise(s, PE_E_ARG, api, "axis %d out of range for rank %d", axis, rank);
        return pe_invalid_result(s, PE_OP_index, PE_E_ARG);
    }
    int64_t param = axis;
    return pe_record_op(s, PE_OP_index, NULL, 0, t, t, rank, shape, &param, 1);
}

pe_array pe_identity_at(const pe_site *s, pe_dtype t, int64_t n)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_identity";
    int64_t shape[2] = {n, n};
    if (!pe_rt.initialised) return pe_require_init(s, api), (pe_array){0};
    if (!check_creation(s, api, t, 2, shape)) return pe_invalid_result(s, PE_OP_identity, pe_last_error()->code);
    return pe_record_op(s, PE_OP_identity, NULL, 0, t, t, 2, shape, NULL, 0);
}
