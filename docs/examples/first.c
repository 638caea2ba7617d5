/* first.c — the first program of docs/guide.md: an array from host data,
 * element-wise math and a reduction, read back.
 *   cc first.c $(pkg-config --cflags --libs pe) -o first && ./first */
#include <pe.h>
#include <stdio.h>

int main(void)
{
    if (pe_init(NULL) != PE_OK) return 1;

    float data[6] = {1, 2, 3, 4, 5, 6};
    pe_array x = pe_f32_2d(data, 2, 3);         /* a 2 x 3 array: a copy of data */
    pe_array y = pe_add(pe_mul(x, 2.0f), 1.0f); /* 2x + 1: recorded, nothing computed yet */
    pe_array total = pe_sum(y);                 /* the sum of y's elements, a 0-d array */

    float out[6], sum;
    if (pe_read(y, out, sizeof out) != PE_OK) return 1; /* computed here, copied to out */
    if (pe_read_f32(total, &sum) != PE_OK) return 1;
    printf("y[1][2] = %g, sum = %g\n", out[5], sum);
    pe_print(stdout, y);

    pe_shutdown(); /* frees every array still alive */
    return out[5] == 13 && sum == 48 ? 0 : 1;
}
