/* macro.c — a code reuse section (PE_MACRO) in a loop, its body written
 * naturally (nested calls, a named temporary never released): built with
 * and without pecc it prints the same values, runs its body once and
 * replays every later execution, and leaves only the loop's own arrays
 * alive (pecc's last-use releases inside the body, the section's end
 * releasing the rest).
 *
 *   macro STEPS    prints "values ...", "body runs R", "replays H", "live arrays L" */
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

enum { N = 300 };

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 100;
    static float hx[N], hy[N], out[N];
    if (steps < 1 || pe_init(NULL) != PE_OK) return 1;
    for (int i = 0; i < N; i++) hx[i] = (float)i / N, hy[i] = (float)(i % 17) * 0.01f;
    pe_array acc = pe_f32_1d(hx, N), y = pe_f32_1d(hy, N);
    int body_runs = 0;
    for (int s = 0; s < steps; s++) {
        pe_array ins[2] = {acc, y}, outs[1];
        int mode = s % 2;
        PE_MACRO(step, ins, 2, outs, 1, &mode, sizeof mode)
        {
            body_runs++;
            pe_array t = pe_mul(ins[0], 0.5f);
            outs[0] = mode ? pe_add(pe_mul(t, t), pe_sin(ins[1])) : pe_sub(pe_cos(t), ins[1]);
        }
        pe_release(acc);
        acc = outs[0];
    }
    if (pe_read(acc, out, sizeof out) != PE_OK) return 1;
    pe_release(acc), pe_release(y);
    pe_sync();
    pe_stats st;
    pe_get_stats(&st);
    printf("values %.9g %.9g %.9g\n", out[0], out[N / 2], out[N - 1]);
    printf("body runs %d\nreplays %llu\nlive arrays %lld\n", body_runs, (unsigned long long)st.macro_hits,
           (long long)st.live_arrays);
    pe_shutdown();
    return 0;
}
