/* api_debug.c — the debugger's entry points: pe_peek (a value looked at
 * without changing how the work is batched or fused) and pe_reference (the
 * reference interpreter's result of a value, as an array).  Both evaluate on
 * the interpreter beside the real work (exec/interp/reference.c). */
#include <stdlib.h>
#include <string.h>

#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/site.h"
#include "../../exec/interp/reference.h"

/* An invalid array: false after raising its error (as a read does). */
static bool valid(const pe_site *s, const pe_port *p, const char *api)
{
    if (p->state != PE_PORT_INVALID) return true;
    pe_status code = p->err_raised || p->err_code == PE_OK ? PE_E_INVALID : p->err_code;
    pe_raise(s, code, api, "the array is invalid: %s", p->err_msg ? p->err_msg : "an operation it depends on failed");
    return false;
}

/* a's value by the interpreter (reference: PE_CHECK's references where
 * made), or NULL after raising. */
static void *evaluate(const pe_site *s, uint32_t idx, bool reference, const char *api)
{
    pe_port *p = pe_port_at(idx);
    if (!valid(s, p, api)) return NULL;
    char *why = NULL;
    void *value = pe_reference_evaluate(idx, reference, &why);
    if (!value) {
        if (why) pe_raise(s, PE_E_INVALID, api, "its value cannot be computed: %s", why);
        else pe_raise(s, PE_E_NOMEM, api, "out of memory for the value of a %s array of %lld elements",
                      pe_dtype_name((pe_dtype)p->dtype), (long long)p->numel);
        free(why);
    }
    return value;
}

int pe_peek_at(const pe_site *s, pe_array a, void *dst, size_t dst_bytes)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    uint32_t idx;
    pe_port *p = pe_port_lookup(s, a, "pe_peek", &idx);
    if (!p) return pe_last_error() ? pe_last_error()->code : PE_E_HANDLE;
    if (!valid(s, p, "pe_peek")) return pe_last_error()->code;
    if (!dst) return pe_raise(s, PE_E_ARG, "pe_peek", "dst is NULL");
    if (dst_bytes != pe_port_bytes(p))
        return pe_raise(s, PE_E_ARG, "pe_peek", "dst_bytes is %zu but the %s array of %lld elements needs %zu",
                        dst_bytes, pe_dtype_name((pe_dtype)p->dtype), (long long)p->numel, pe_port_bytes(p));
    void *value = evaluate(s, idx, false, "pe_peek");
    if (!value) return pe_last_error()->code;
    memcpy(dst, value, dst_bytes);
    free(value);
    return PE_OK;
}

pe_array pe_reference_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    uint32_t idx;
    pe_port *p = pe_port_lookup(s, a, "pe_reference", &idx);
    if (!p) return pe_invalid_result(s, PE_OP_data, pe_last_error() ? pe_last_error()->code : PE_E_HANDLE);
    void *value = evaluate(s, idx, true, "pe_reference");
    if (!value) return pe_invalid_result(s, PE_OP_data, pe_last_error()->code);
    int64_t shape[PE_MAX_RANK];
    memcpy(shape, p->shape, sizeof shape);
    pe_array r = pe_from_host_at(s, (pe_dtype)p->dtype, p->rank, shape, value);
    free(value);
    return r;
}
