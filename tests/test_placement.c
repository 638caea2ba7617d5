/* test_placement.c — the cost model of automatic placement
 * (exec/placement.c) on the figures of real machines: an H100 SXM and an
 * RTX 3090 as their drivers describe them, a host CPU of 2 and of 16
 * threads.  The model's speeds are checked against what was measured on
 * the H100 (bench/RESULTS.md); its choices against the cases that decide
 * where work belongs: where its inputs are, how much arithmetic it does per
 * byte, its dtype, its size.  (How pe_place_needs reads a real batch, and
 * that the CUDA executor follows the choice, test_cuda_multi_gpu checks on
 * the emulated GPUs.) */
#include "test_util.h"

#include "exec/placement.h"

/* cuDeviceGetAttribute's answers on the two parts */
static const pe_cuda_device h100 = {.name = "NVIDIA H100 80GB HBM3", .cc_major = 9, .cc_minor = 0, .sms = 132,
                                    .fast_f64 = true, .f64_ratio = 2, .clock_khz = 1980000,
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
    pe_place_speed s = pe_place_gpu_speed(&h100);
    assert_true(s.bytes_per_s > 0.9 * 2486e9 && s.bytes_per_s < 1.1 * 2678e9);
    assert_true(fabs(2 * s.work_per_s - 67e12) < 0.05 * 67e12);
    assert_true(s.f64_ratio == 2);
    assert_true(pe_place_gpu_speed(&rtx3090).f64_ratio == 64);
    /* a driver that tells nothing but the SMs: usable figures all the same */
    pe_place_speed unknown = pe_place_gpu_speed(&(pe_cuda_device){.cc_major = 8, .cc_minor = 9, .sms = 20});
    assert_true(unknown.bytes_per_s > 1e10 && unknown.work_per_s > 1e11 && unknown.f64_ratio >= 2 && unknown.batch_s > 0);
    pe_place_speed one = pe_place_cpu_speed(1), many = pe_place_cpu_speed(16);
    assert_true(many.work_per_s == 16 * one.work_per_s);
    assert_true(many.bytes_per_s > one.bytes_per_s && many.bytes_per_s <= 16 * one.bytes_per_s);
}

/* Inputs on the host: a light map stays on the CPU (copying it to the GPU
 * takes longer than a few cores take to compute it), an arithmetic-heavy
 * one goes to the GPU unless the CPU has cores enough. */
static void test_work_on_host_data(void **state)
{
    (void)state;
    pe_place_speed cpu2 = pe_place_cpu_speed(2), cpu16 = pe_place_cpu_speed(16), gpu = pe_place_gpu_speed(&h100);
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
    pe_place_speed cpu16 = pe_place_cpu_speed(16), gpu = pe_place_gpu_speed(&h100), consumer = pe_place_gpu_speed(&rtx3090);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_speeds_follow_the_device_attributes),
        cmocka_unit_test(test_work_on_host_data),
        cmocka_unit_test(test_work_on_gpu_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
