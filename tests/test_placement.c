/* test_placement.c — the cost model of automatic placement
 * (jit/sched/placement.c) on the figures of real machines: an H100 SXM and an
 * RTX 3090 as their drivers describe them, a host CPU of 2 and of 16
 * threads.  The model's speeds are checked against what was measured on
 * the H100 (bench/RESULTS.md); its choices against the cases that decide
 * where work belongs: where its inputs are, how much arithmetic it does per
 * byte, its dtype, its size; what it reads of a batch against the batch's
 * arrays counted by hand.  (That the CUDA executor follows the choice,
 * test_cuda_multi_gpu checks on the emulated GPUs.) */
#include "test_util.h"

#include "jit/sched/placement.h"
#include "jit/record/record.h"
#include "exec/cpu/cpu.h"
#include "exec/cpu/cpu_gccjit.h"
#include "exec/cuda/cuda.h"
#include "exec/cuda/cuda_emit.h"

/* cuDeviceGetAttribute's answers on the two parts */
static const pe_cuda_device h100 = {.name = "NVIDIA H100 80GB HBM3", .cc_major = 9, .cc_minor = 0, .sms = 132,
                                    .f64_ratio = 2, .clock_khz = 1980000,
                                    .memory_clock_khz = 2619000, .memory_bus_bits = 5120};
static const pe_cuda_device rtx3090 = {.name = "NVIDIA GeForce RTX 3090", .cc_major = 8, .cc_minor = 6, .sms = 82,
                                       .f64_ratio = 64, .clock_khz = 1695000, .memory_clock_khz = 9751000,
                                       .memory_bus_bits = 384};

enum { HOST = PE_PLACE_HOST, GPU0 = 1, GPU1 = 2 };

/* A map of `elements` f32 results from `inputs` f32 arrays that all sit
 * at `at` (a place), each element costing `cost` adds. */
static pe_batch_needs map(double elements, int inputs, double cost, int at)
{
    pe_batch_needs n = {.work = elements * cost, .traffic = 4 * elements * (inputs + 1)};
    for (int place = 0; place < PE_PLACES; place++) {
        if (place == at) continue;
        n.missing[place] = 4 * elements * inputs;
        n.copies[place] = inputs;
        if (at != HOST) n.drained[place] = 1u << (at - 1);
    }
    return n;
}

static int cheapest(const pe_batch_needs *n, const pe_place_speed *cpu, const pe_place_speed *gpu0,
                    const pe_place_speed *gpu1)
{
    const pe_place_speed *speeds[PE_PLACES] = {cpu, gpu0, gpu1};
    double seconds;
    int place = pe_place_cheapest(n, speeds, &seconds);
    assert_true(seconds > 0 && seconds < 1);
    return place;
}

/* The H100's bandwidth from its memory clock and bus: within 10% of the
 * device-to-device copy measured on one (2486-2678 GB/s); its f32 rate is
 * the published 67 TFLOP/s (an FMA is two) within 5%, f64 half that. */
static void test_gpu_speeds_follow_the_device_attributes(void **state)
{
    (void)state;
    pe_place_speed s = pe_cuda_place_speed(&h100);
    assert_true(s.bytes_per_s > 0.9 * 2486e9 && s.bytes_per_s < 1.1 * 2678e9);
    assert_true(fabs(2 * s.work_per_s - 67e12) < 0.05 * 67e12);
    assert_true(s.f64_ratio == 2);
    assert_true(pe_cuda_place_speed(&rtx3090).f64_ratio == 64);
    /* a driver that tells nothing but the SMs: usable figures all the same */
    pe_place_speed unknown = pe_cuda_place_speed(&(pe_cuda_device){.cc_major = 8, .cc_minor = 9, .sms = 20});
    assert_true(unknown.bytes_per_s > 1e10 && unknown.work_per_s > 1e11 && unknown.f64_ratio >= 2 && unknown.batch_s > 0);
    pe_place_speed one = pe_cpu_place_speed(1), many = pe_cpu_place_speed(16);
    assert_true(many.work_per_s == 16 * one.work_per_s);
    assert_true(many.bytes_per_s > one.bytes_per_s && many.bytes_per_s <= 16 * one.bytes_per_s);
}

/* Inputs on the host: a light map stays on the CPU (copying it to the GPU
 * takes longer than a few cores take to compute it), an arithmetic-heavy
 * one goes to the GPU unless the CPU has cores enough. */
static void test_work_on_host_data(void **state)
{
    (void)state;
    pe_place_speed cpu2 = pe_cpu_place_speed(2), cpu16 = pe_cpu_place_speed(16), gpu = pe_cuda_place_speed(&h100);
    pe_batch_needs triad = map(1 << 20, 2, 2, HOST);
    assert_int_equal(cheapest(&triad, &cpu2, &gpu, NULL), HOST);
    assert_int_equal(cheapest(&triad, &cpu16, &gpu, NULL), HOST);
    pe_batch_needs heavy = map(1 << 20, 1, 200, HOST); /* ~ten transcendentals an element */
    assert_int_equal(cheapest(&heavy, &cpu2, &gpu, NULL), GPU0);
    pe_batch_needs heavier = map(1 << 20, 1, 2000, HOST);
    assert_int_equal(cheapest(&heavier, &cpu16, &gpu, NULL), GPU0);
    /* Black-Scholes on 10M options given by the host: 120 MB to copy take
     * longer than 16 threads take to price them; two threads are slower */
    pe_batch_needs bs = map(1e7, 3, 180, HOST);
    assert_int_equal(cheapest(&bs, &cpu16, &gpu, NULL), HOST);
    assert_int_equal(cheapest(&bs, &cpu2, &gpu, NULL), GPU0);
}

/* Inputs on a GPU: batches of every size stay there (a copy to the host
 * waits for the GPU's work in flight too); an input on another GPU moves
 * only for work heavy enough, as f64 on a consumer part. */
static void test_work_on_gpu_data(void **state)
{
    (void)state;
    pe_place_speed cpu16 = pe_cpu_place_speed(16), gpu = pe_cuda_place_speed(&h100), consumer = pe_cuda_place_speed(&rtx3090);
    for (double elements = 1; elements <= 1e8; elements *= 10) {
        pe_batch_needs light = map(elements, 2, 2, GPU0);
        assert_int_equal(cheapest(&light, &cpu16, &gpu, NULL), GPU0);
        pe_batch_needs on_second = map(elements, 2, 2, GPU1);
        assert_int_equal(cheapest(&on_second, &cpu16, &gpu, &gpu), GPU1);
    }
    /* tiny on the host stays on the host */
    pe_batch_needs tiny = map(1000, 2, 2, HOST);
    assert_int_equal(cheapest(&tiny, &cpu16, &gpu, &gpu), HOST);
    /* f64 on the consumer part (1/64 rate) holding the data: light work
     * stays there, heavy work moves to the H100 */
    pe_batch_needs light64 = map(1 << 20, 1, 2, GPU1), heavy64 = map(1 << 20, 1, 200, GPU1);
    light64.work_f64 = light64.work, light64.work = 0, light64.traffic *= 2;
    heavy64.work_f64 = heavy64.work, heavy64.work = 0, heavy64.traffic *= 2;
    assert_int_equal(cheapest(&light64, &cpu16, &gpu, &consumer), GPU1);
    assert_int_equal(cheapest(&heavy64, &cpu16, &gpu, &consumer), GPU0);
}

/* A batch the runtime recorded: t = a * b (released in the batch), u = t + a,
 * s = sum(u), v = c * 2, w = d + 1 — on 1000 f32 elements, in fused kernels
 * (the GPU's rules; {t, u, s} and {v, w} today, one kernel would read and
 * write the same).  Its traffic: a, b, c, d read once, v, w written (t
 * stays in registers; so does u, held but read only by the sum in its
 * kernel: an expression after the batch, exec/base/deferred.c; s's partials
 * are not counted); its work: 1000
 * iterations x 5 one-add ops.  Residency, set by hand on the inputs: a and
 * b on the host only, c on the host and GPU 0, d on GPU 1 only. */
static void test_needs_of_a_recorded_batch(void **state)
{
    (void)state;
    enum { N = 1000 };
    static float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)i;
    assert_int_equal(pe_init(&(pe_config){.device = 1}), PE_OK);
    pe_array a = pe_f32_1d(x, N), b = pe_f32_1d(x, N), c = pe_f32_1d(x, N), d = pe_f32_1d(x, N);
    pe_sync();
    pe_array t = pe_mul(a, b), u = pe_add(t, a), s = pe_sum(u), v = pe_mul(c, 2.0f), w = pe_add(d, 1.0f);
    pe_release(t);
    {
        PE_API_GUARD;
        pe_port *pc = pe_port_lookup(PE_HERE, c, "test", NULL), *pd = pe_port_lookup(PE_HERE, d, "test", NULL);
        void *d_host = pd->buf;
        static char gpu_memory[2][N * sizeof(float)]; /* stands for device copies: never read */
        pc->dev_buf = gpu_memory[0], pc->dev_gpu = 0;
        pd->dev_buf = gpu_memory[1], pd->dev_gpu = 1, pd->host_stale = true, pd->buf = NULL;
        pe_program_seq seq;
        assert_true(pe_proggen(pe_rec.queue, pe_rec.queue_len, pe_rec.batch_epoch, &pe_cuda_fusion_rules, &seq));
        pe_batch_needs n;
        assert_true(pe_place_needs(&seq, &n));
        pc->dev_buf = NULL, pd->dev_buf = NULL, pd->host_stale = false, pd->buf = d_host;
        pe_program_seq_free(&seq);
        const double bytes = N * sizeof(float);
        assert_true(n.traffic == 6 * bytes);
        assert_true(n.work == 5.0 * N && n.work_f64 == 0);
        /* the host lacks d (from GPU 1, which drains first); GPU 0 lacks
         * a, b, d; GPU 1 lacks a, b, c (from the host: nothing drains) */
        assert_true(n.missing[HOST] == bytes && n.copies[HOST] == 1 && n.drained[HOST] == 1u << 1);
        assert_true(n.missing[GPU0] == 3 * bytes && n.copies[GPU0] == 3 && n.drained[GPU0] == 1u << 1);
        assert_true(n.missing[GPU1] == 3 * bytes && n.copies[GPU1] == 3 && n.drained[GPU1] == 0);
    }
    double sum;
    assert_int_equal(pe_read_f64(s, &sum), PE_OK); /* the batch runs as usual after */
    assert_true(sum == (float)((double)N * (N - 1) * (2 * N - 1) / 6 + (double)N * (N - 1) / 2)); /* of i^2 + i, an f32 */
    pe_release(a), pe_release(b), pe_release(c), pe_release(d), pe_release(u), pe_release(s), pe_release(v), pe_release(w);
    tu_expect_no_error();
    pe_shutdown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_speeds_follow_the_device_attributes),
        cmocka_unit_test(test_work_on_host_data),
        cmocka_unit_test(test_work_on_gpu_data),
        cmocka_unit_test(test_needs_of_a_recorded_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
