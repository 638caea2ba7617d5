/* snippets.c — the fragments of docs/guide.md that are not whole programs,
 * each in a function, run in order (ctest: guide_snippets).  Exits non-zero
 * when one does not behave as the guide says. */
#include <pe.h>
#include <stdio.h>
#include <string.h>

/* "Loops and lifetimes": a function that makes temporaries and returns one array. */
static pe_array normalise(pe_array v)
{
    pe_scope scope = pe_scope_begin();
    pe_array centred = pe_sub(v, pe_mean(v));
    pe_array result = pe_keep(pe_div(centred, pe_stddev(v))); /* survives the scope */
    pe_scope_end(scope);                                       /* centred, the mean, the stddev go */
    return result;                                             /* the caller releases it */
}

/* "Errors and handlers": report and continue instead of aborting. */
static int report(const pe_error *e, void *user)
{
    (void)user;
    fprintf(stderr, "caught %s: %s\n", pe_status_name(e->code), e->message);
    return 1; /* handled: the program goes on, the failed call's result is invalid */
}

static int errors(void)
{
    float a3[3] = {1, 2, 3}, a4[4] = {1, 2, 3, 4};
    pe_array a = pe_f32_1d(a3, 3), b = pe_f32_1d(a4, 4);
    pe_push_error_handler(report, NULL);
    pe_array c = pe_add(a, b);            /* [3] + [4]: PE_E_SHAPE at this line, reported by report() */
    pe_array d = pe_mul(c, 2.0f);         /* an invalid operand: an invalid result, no second error */
    float out[3];
    int rc = pe_read(d, out, sizeof out); /* PE_E_INVALID, raised too: its message names line 31's error */
    pe_pop_error_handler();
    const pe_error *last = pe_last_error();
    int ok = !pe_is_valid(c) && !pe_is_valid(d) && rc == PE_E_INVALID && last && last->code == PE_E_INVALID && strstr(last->message, "do not broadcast");
    printf("errors: read returned %s, last error %s at line %d\n", pe_status_name((pe_status)rc),
           last ? pe_status_name(last->code) : "none", last ? last->line : 0);
    pe_release(a), pe_release(b), pe_release(c), pe_release(d);
    return ok;
}

/* "GPU": the devices PE sees. */
static int devices(void)
{
    for (int dev = 0; dev < pe_device_count(); dev++) {
        pe_device_info info;
        if (pe_device_info(dev, &info) != PE_OK) return 0;
        printf("device %d: %s %s (%s), %d cores, %.1f GB\n", dev, info.kind == PE_DEVICE_CPU ? "CPU" : "GPU",
               info.name, info.arch, info.cores, info.memory_bytes / 1e9);
    }
    return pe_device_count() >= 1;
}

/* "Debugging": pe_peek and pe_reference do not change how the program's work runs. */
static int debugging(void)
{
    double v[4] = {0.5, 1.0, 1.5, 2.0};
    pe_array x = pe_f64_1d(v, 4);
    pe_array y = pe_tanh(pe_mul(x, 3.0));
    double peeked[4], fast[4], ref[4];
    pe_peek(y, peeked, sizeof peeked); /* computed on the interpreter, aside */
    pe_array r = pe_reference(y);      /* the reference as an array */
    pe_read(y, fast, sizeof fast);
    pe_read(r, ref, sizeof ref);
    int ok = 1;
    for (int i = 0; i < 4; i++) ok &= peeked[i] == ref[i] && (fast[i] - ref[i]) < 1e-12 && (ref[i] - fast[i]) < 1e-12;
    printf("debugging: tanh(3 * 2) = %.17g here, %.17g in the reference\n", fast[3], ref[3]);
    return ok;
}

/* "Reading results": a whole array, one number, a zero-copy view. */
static int reading(void)
{
    pe_array m = pe_index(PE_F32, 2, (int64_t[]){2, 3}, 1); /* [[0 1 2] [0 1 2]] */
    float all[6], total;
    pe_read(m, all, sizeof all);      /* the whole array, row-major; sizeof must be exact */
    pe_read_f32(pe_sum(m), &total);   /* one number (pe_read_f64 for a double) */
    const float *view = pe_map(m);    /* no copy: read-only until pe_unmap(m) */
    float fifth = view[4];
    pe_unmap(m);
    int64_t dims[PE_MAX_RANK];
    int rank = pe_shape(m, dims);     /* shapes are known at once, nothing computed */
    pe_print(stdout, m);              /* NumPy's layout */
    return all[5] == 2 && total == 6 && fifth == 1 && rank == 2 && dims[0] == 2 && dims[1] == 3;
}

int main(void)
{
    if (pe_init(NULL) != PE_OK) return 1;
    float raw[4] = {1, 2, 3, 4};
    pe_array v = pe_f32_1d(raw, 4);
    pe_array z = normalise(v);
    float zs[4];
    int ok = pe_read(z, zs, sizeof zs) == PE_OK && zs[0] < 0 && zs[3] > 0;
    pe_release(z), pe_release(v);
    ok &= reading();
    ok &= errors();
    ok &= devices();
    ok &= debugging();
    pe_shutdown();
    printf("%s\n", ok ? "all as the guide says" : "MISMATCH");
    return ok ? 0 : 1;
}
