/* grad_programs_driver.c — the PE half of the JAX differential of
 * derivatives (issue 43; tests/jax_grad.py writes random programs and
 * compares): reads one program, records it with its inputs marked
 * (pe_grad_enable), and writes pe_grad of the sum of its output with
 * respect to every input, and pe_jvp along given tangents, as raw
 * little-endian f64.
 *
 *   grad_programs_driver DIR   DIR/program.txt, one statement per line:
 *     input RANK D0.. FILE TANGENT_FILE   the next slot: an f64 variable and its tangent
 *     OP SLOT [SLOT] [INTEGERS]           the next slot: OP of earlier slots (the ops below)
 *     output SLOT                         y; writes grad0.bin .. (one per input) and jvp.bin
 *   files are relative to DIR.
 * Exits 0 when the program ran, 1 naming what failed. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pe.h>

#define MAX_SLOTS 256
#define MAX_INPUTS 8

static char dir[4096];

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "grad_programs_driver: %s %s\n", what, detail);
    exit(1);
}

static FILE *open_in(const char *name, const char *mode)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, mode);
    if (!f) fail("cannot open", path);
    return f;
}

static pe_array load(int rank, const int64_t *shape, const char *name)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    FILE *f = open_in(name, "rb");
    if (!v || fread(v, sizeof *v, (size_t)n, f) != (size_t)n) fail("cannot read", name);
    fclose(f);
    pe_array a = pe_from_host(PE_F64, rank, shape, v);
    free(v);
    return a;
}

static void store(pe_array a, const char *name)
{
    int64_t n = pe_numel(a);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v || pe_read(a, v, (size_t)n * sizeof *v) != PE_OK) fail("cannot read back", name);
    FILE *f = open_in(name, "wb");
    if (fwrite(v, sizeof *v, (size_t)n, f) != (size_t)n) fail("cannot write", name);
    fclose(f);
    free(v);
}

/* One statement's value from the ops the generator draws. */
static pe_array apply(const char *op, pe_array a, pe_array b, const long *k)
{
    if (!strcmp(op, "neg")) return pe_neg(a);
    if (!strcmp(op, "exp")) return pe_exp(a);
    if (!strcmp(op, "sin")) return pe_sin(a);
    if (!strcmp(op, "cos")) return pe_cos(a);
    if (!strcmp(op, "tanh")) return pe_tanh(a);
    if (!strcmp(op, "atan")) return pe_atan(a);
    if (!strcmp(op, "erf")) return pe_erf(a);
    if (!strcmp(op, "cdf_norm")) return pe_cdf_norm(a);
    if (!strcmp(op, "sigmoid")) return pe_sigmoid(a);
    if (!strcmp(op, "square")) return pe_mul(a, a);
    if (!strcmp(op, "sqrt1")) return pe_sqrt(pe_add(pe_mul(a, a), 1.0));
    if (!strcmp(op, "log1")) return pe_log(pe_add(pe_mul(a, a), 1.0));
    if (!strcmp(op, "add")) return pe_add(a, b);
    if (!strcmp(op, "sub")) return pe_sub(a, b);
    if (!strcmp(op, "mul")) return pe_mul(a, b);
    if (!strcmp(op, "div1")) return pe_div(a, pe_add(pe_mul(b, b), 1.0));
    if (!strcmp(op, "max")) return pe_max(a, b);
    if (!strcmp(op, "min")) return pe_min(a, b);
    if (!strcmp(op, "pow1")) return pe_pow(pe_add(pe_mul(a, a), 1.0), b);
    if (!strcmp(op, "atan2")) return pe_atan2(a, b);
    if (!strcmp(op, "sum")) return k[0] < 0 ? pe_sum(a) : pe_sum_axis(a, (int)k[0]);
    if (!strcmp(op, "mean")) return k[0] < 0 ? pe_mean(a) : pe_mean_axis(a, (int)k[0]);
    if (!strcmp(op, "amax")) return k[0] < 0 ? pe_max(a) : pe_max_axis(a, (int)k[0]);
    if (!strcmp(op, "var")) return k[0] < 0 ? pe_var(a) : pe_var_axis(a, (int)k[0]);
    if (!strcmp(op, "norm2")) return k[0] < 0 ? pe_norm2(a) : pe_norm2_axis(a, (int)k[0]);
    if (!strcmp(op, "logsumexp")) return pe_logsumexp(a, (int)k[0]);
    if (!strcmp(op, "softmax")) return pe_softmax(a, (int)k[0]);
    if (!strcmp(op, "cumsum")) return pe_cumsum(a, (int)k[0]);
    if (!strcmp(op, "sort")) return pe_sort(a, (int)k[0], false);
    if (!strcmp(op, "transpose")) return pe_transpose(a);
    if (!strcmp(op, "flatten")) return pe_reshape(a, 1, (int64_t[]){-1});
    if (!strcmp(op, "roll")) return pe_roll(a, k[0], (int)k[1]);
    if (!strcmp(op, "pad")) return pe_pad(a, (int)k[0], k[1], k[2], PE_PAD_CONSTANT, 0.0);
    if (!strcmp(op, "slice1")) { /* drop the first element along axis k[0] */
        int rank = pe_rank(a);
        int64_t start[8] = {0}, count[8];
        for (int d = 0; d < rank; d++) count[d] = pe_dim(a, d);
        start[k[0]] = 1, count[k[0]] -= 1;
        return pe_slice(a, start, count);
    }
    if (!strcmp(op, "matmul")) return pe_matmul(a, b);
    fail("unknown op", op);
    return (pe_array){0};
}

int main(int argc, char **argv)
{
    if (argc != 2) fail("usage:", "grad_programs_driver DIR");
    snprintf(dir, sizeof dir, "%s", argv[1]);
    if (pe_init(NULL) != PE_OK) fail("pe_init", "failed");
    FILE *f = open_in("program.txt", "r");
    pe_array slot[MAX_SLOTS], inputs[MAX_INPUTS], tangents[MAX_INPUTS];
    int n_slots = 0, n_inputs = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char op[64], names[2][256];
        if (sscanf(line, "%63s", op) != 1) continue;
        char *rest = line + strlen(op) + 1;
        if (!strcmp(op, "input")) {
            int rank, used;
            int64_t shape[8];
            if (sscanf(rest, "%d%n", &rank, &used) != 1 || rank > 8 || n_inputs == MAX_INPUTS) fail("bad input", line);
            rest += used;
            for (int d = 0; d < rank; d++) {
                long long v;
                if (sscanf(rest, "%lld%n", &v, &used) != 1) fail("bad shape", line);
                shape[d] = v, rest += used;
            }
            if (sscanf(rest, "%255s %255s", names[0], names[1]) != 2) fail("bad files", line);
            inputs[n_inputs] = slot[n_slots++] = pe_grad_enable(load(rank, shape, names[0]));
            tangents[n_inputs++] = load(rank, shape, names[1]);
        } else if (!strcmp(op, "output")) {
            int y;
            if (sscanf(rest, "%d", &y) != 1 || y < 0 || y >= n_slots) fail("bad output", line);
            pe_array g[MAX_INPUTS];
            if (pe_grad(slot[y], n_inputs, inputs, g) != PE_OK) fail("pe_grad", "failed");
            for (int i = 0; i < n_inputs; i++) {
                char name[32];
                snprintf(name, sizeof name, "grad%d.bin", i);
                store(g[i], name);
            }
            store(pe_sum(pe_jvp(slot[y], n_inputs, inputs, tangents)), "jvp.bin");
        } else {
            int a, b = -1, used;
            long k[3] = {0, 0, 0};
            if (sscanf(rest, "%d%n", &a, &used) != 1 || a < 0 || a >= n_slots || n_slots == MAX_SLOTS) fail("bad operand", line);
            rest += used;
            bool binary = !strcmp(op, "add") || !strcmp(op, "sub") || !strcmp(op, "mul") || !strcmp(op, "div1") ||
                          !strcmp(op, "max") || !strcmp(op, "min") || !strcmp(op, "pow1") || !strcmp(op, "atan2") ||
                          !strcmp(op, "matmul");
            if (binary && (sscanf(rest, "%d%n", &b, &used) != 1 || b < 0 || b >= n_slots)) fail("bad operand", line);
            if (binary) rest += used;
            for (int i = 0; i < 3 && sscanf(rest, "%ld%n", &k[i], &used) == 1; i++) rest += used;
            slot[n_slots++] = apply(op, slot[a], binary ? slot[b] : (pe_array){0}, k);
        }
    }
    fclose(f);
    pe_shutdown();
    return 0;
}
