// cuda_on_host.hpp — just enough of CUDA C for the host's C++ compiler to
// build and run the CUDA emitter's kernels: the built-in indices become
// thread-local variables set for each emulated thread, the device library
// becomes libm, the bit moves become memcpy.  tests/test_cuda_on_host.c runs
// element-wise kernels thread after thread (its loop over pe_emul_thread);
// pe_emul_launch_blocks, which PE_EMUL_ENTRY appends to the source, runs
// each block's threads as real threads, block after block, as kernels that
// cooperate within a block need (__shared__, __syncthreads, warp shuffles:
// the reductions).  The emulated NVRTC (tests/emul) precompiles this header
// and launches every kernel through pe_emul_launch_blocks.
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__
#define __launch_bounds__(n)
// one block runs at a time: a static array is the block's shared memory
#define __shared__ static

struct pe_emul_dim3 {
    unsigned x, y, z;
};
static thread_local pe_emul_dim3 threadIdx, blockIdx, blockDim, gridDim;

// The test sets the emulated thread's indices through this entry point.
extern "C" void pe_emul_thread(unsigned block, unsigned thread, unsigned grid, unsigned block_size)
{
    blockIdx = {block, 0, 0}, threadIdx = {thread, 0, 0};
    gridDim = {grid, 1, 1}, blockDim = {block_size, 1, 1};
}

template <typename To, typename From> static inline To pe_emul_bits(From f)
{
    static_assert(sizeof(To) == sizeof(From), "same size");
    To t;
    std::memcpy(&t, &f, sizeof t);
    return t;
}
static inline float __int_as_float(int i) { return pe_emul_bits<float>(i); }
static inline int __float_as_int(float f) { return pe_emul_bits<int>(f); }
static inline double __longlong_as_double(long long i) { return pe_emul_bits<double>(i); }
static inline long long __double_as_longlong(double d) { return pe_emul_bits<long long>(d); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
// CUDA's normcdf is within 5 ulp; in double, -x / sqrt(2) would round and
// the tails (erfc's relative error grows with x^2) be hundreds of ulp off
static inline double normcdf(double x) { return (double)(0.5L * std::erfc(-(long double)x / std::sqrt(2.0L))); }

// CUDA's vector types, aligned as on the GPU: the kernels are built with
// -fsanitize=alignment (trapping), so a misaligned vector access stops the
// test as it would fault on a GPU.
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(16) int4 {
    int x, y, z, w;
};
struct alignas(16) double2 {
    double x, y;
};
struct alignas(4) uchar4 {
    unsigned char x, y, z, w;
};

// ---------------------------------------------- blocks of real threads

struct pe_emul_warp {
    std::unique_ptr<std::barrier<>> barrier;
    unsigned long long slot[32];
    std::atomic<int> exited{0}; /* lanes whose thread has returned */
};

struct pe_emul_block {
    std::unique_ptr<std::barrier<>> barrier;
    std::unique_ptr<pe_emul_warp[]> warps;
};
// the block a thread works in (one block at a time runs: __shared__ is static)
static thread_local pe_emul_block *pe_emul_current;

static inline void __syncthreads() { pe_emul_current->barrier->arrive_and_wait(); }

// Lane i gets lane i + delta's value (its own past the warp's end).  Only
// the full mask is emulated, and every lane it names must take part: a
// shuffle after some lanes returned is undefined on a GPU, and aborts here.
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta)
{
    static_assert(sizeof(T) <= sizeof(unsigned long long), "one slot a lane");
    if (mask != 0xffffffffu) std::abort();
    unsigned lane = threadIdx.x % 32;
    pe_emul_warp &w = pe_emul_current->warps[threadIdx.x / 32];
    std::memcpy(&w.slot[lane], &v, sizeof v);
    w.barrier->arrive_and_wait();
    if (w.exited.load() != 0) std::abort(); /* a lane of the mask has returned */
    T r = v;
    if (lane + delta < 32) std::memcpy(&r, &w.slot[lane + delta], sizeof r);
    w.barrier->arrive_and_wait(); /* every lane has read before the next write */
    return r;
}

// grid x block threads: `block` real threads, each taking its place in
// block after block; no thread starts block b + 1 before all have left b
// (its shared memory is the next block's).  One launch at a time in the
// process: the emulated driver's streams may launch concurrently.
template <typename Args>
static void pe_emul_blocks(void (*fn)(long long, Args), long long n, const Args &a, unsigned grid, unsigned block)
{
    static std::mutex one_launch_at_a_time;
    std::lock_guard<std::mutex> lock(one_launch_at_a_time);
    if (block % 32 != 0) std::abort(); /* whole warps, as the emitter launches them */
    std::vector<pe_emul_block> blocks(grid);
    for (pe_emul_block &blk : blocks) {
        blk.barrier = std::make_unique<std::barrier<>>(block);
        blk.warps = std::make_unique<pe_emul_warp[]>(block / 32);
        for (unsigned w = 0; w < block / 32; w++) blk.warps[w].barrier = std::make_unique<std::barrier<>>(32);
    }
    std::barrier<> between_blocks(block);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; t++)
        threads.emplace_back([&, t] {
            for (unsigned b = 0; b < grid; b++) {
                pe_emul_block &blk = blocks[b];
                pe_emul_current = &blk;
                pe_emul_thread(b, t, grid, block);
                fn(n, a);
                blk.warps[t / 32].exited++;
                blk.warps[t / 32].barrier->arrive_and_drop();
                blk.barrier->arrive_and_drop();
                between_blocks.arrive_and_wait();
            }
        });
    for (std::thread &t : threads) t.join();
}

// Appended after the kernels' source: the entry point for kernels whose
// threads cooperate.
#define PE_EMUL_ENTRY                                                                                          \
    extern "C" void pe_emul_launch_blocks(void *fn, long long n, const pe_cuda_args *a, unsigned grid,        \
                                          unsigned block)                                                      \
    {                                                                                                          \
        pe_emul_blocks(reinterpret_cast<void (*)(long long, pe_cuda_args)>(fn), n, *a, grid, block);          \
    }                                                                                                          \
    extern "C" const unsigned long pe_emul_args_size = sizeof(pe_cuda_args);
