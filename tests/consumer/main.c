/* tests/consumer/main.c — a first program as a user writes it, built against an
 * installed PE (tests/consumer/check.sh): 1² + 2² + 3² through the runtime. */
#include <pe.h>
#include <stdio.h>

int main(void) {
    if (pe_init(NULL) != PE_OK) return 1;
    float x[3] = {1, 2, 3}, y = 0;
    pe_array a = pe_f32_1d(x, 3);
    pe_array s = pe_sum(pe_mul(a, a));
    if (pe_read_f32(s, &y) != PE_OK) return 1;
    pe_shutdown();
    printf("%g\n", y);
    return y == 14.0f ? 0 : 1;
}
