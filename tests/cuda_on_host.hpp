// cuda_on_host.hpp — just enough of CUDA C for the host's C++ compiler to
// build the CUDA emitter's element-wise kernels (tests/test_cuda_on_host.c):
// the built-in indices become thread-local variables that the test sets
// before each emulated thread, the device library becomes libm, the bit
// moves become memcpy.  Reductions (__shared__, __syncthreads) are not
// emulated: their threads would have to run together.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__
#define __launch_bounds__(n)

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
static inline double normcdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

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
