/* tricky.c — extractor corpus: the cases pecc must get right.  The expected
 * IR is tricky.expected (pecc --print-ir, run from the source directory). */
#include <pe.h>

#define SQUARE_PLUS(a, b) pe_add(pe_mul((a), (a)), (b)) /* two requests from one expansion */

typedef struct {
    pe_array field;
} holder;

void keep_elsewhere(pe_array *slot);

/* requests inside a user macro; two requests on one line; literals */
pe_array macros_and_lines(pe_array x)
{
    pe_array y = SQUARE_PLUS(x, x);
    pe_array a = pe_exp(y), b = pe_log(y);
    pe_array c = pe_mul(pe_add(a, b), -2.5);
    return c;
}

/* conditions, do-while, while with a request in its condition */
float conditions(pe_array x, int n)
{
    float v = 0;
    pe_array t = pe_sin(x);
    if (n > 2) {
        pe_array u = pe_cos(t);
        pe_read_f32(pe_sum(u), &v);
    }
    do {
        pe_array w = pe_mul(x, 3);
        pe_read_f32(pe_max(w), &v);
        n--;
    } while (n > 0);
    return v;
}

/* switch, goto: no last-use marks where control flow is not followed */
float jumps(pe_array x, int k)
{
    float v = 0;
    pe_array z = pe_neg(x);
    switch (k) {
    case 0: z = pe_abs(z); break;
    default: break;
    }
    if (k > 5) goto out;
    pe_read_f32(pe_sum(z), &v);
out:
    return v;
}

/* escapes: address taken, stored in a struct field or array, passed to a
 * function outside PE, copied */
void escapes(pe_array x, holder *h)
{
    pe_array p = pe_sqrt(x);
    keep_elsewhere(&p);
    pe_array q = pe_exp(x);
    h->field = q;
    pe_array r[2];
    r[0] = pe_log(x);
    pe_array s = pe_tanh(x), copy = s;
    pe_release(pe_add(copy, r[0]));
}

/* a loop-carried accumulator and a loop whose value is read after it */
pe_array loops(pe_array x, int n)
{
    pe_array acc = pe_mul(x, 0);
    for (int i = 0; i < n; i++) {
        acc = pe_add(acc, pe_exp(x));
    }
    pe_array last = pe_neg(x);
    for (int i = 0; i < n; i++) {
        last = pe_mul(x, i);
        pe_array t = pe_sum(last);
        pe_release(t);
    }
    pe_release(last);
    return acc;
}

/* one variable twice in one request: only the second operand is the last use */
pe_array same_operand_twice(pe_array x)
{
    pe_array y = pe_exp(x);
    pe_array z = pe_mul(y, y);
    return z;
}

/* a request reads its operands when it runs, after its nested requests: the
 * last use of x is the outer call's, not the nested pe_neg's */
pe_array outer_reads_last(pe_array x)
{
    pe_array a = pe_exp(x);
    pe_array r = pe_cond(pe_gt(a, 0.0), a, pe_neg(a));
    return r;
}

/* a redefinition that may not run (inside an if) ends nothing: after the if,
 * x may still hold the old value, so pe_neg's read is not x's last use (the
 * mutation test found no case of it: issue 22, item 11) */
pe_array conditional_redefinition(pe_array a, int c)
{
    pe_array x = pe_exp(a);
    pe_array y = pe_neg(x);
    if (c) x = pe_sqrt(a);
    pe_array z = pe_add(x, y);
    return z;
}
