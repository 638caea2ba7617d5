/* pe.hpp — a header-only C++17 binding over PE's C API (pe.h).
 *
 *   pe::session session;                       // pe_init, errors as exceptions; pe_shutdown at scope end
 *   pe::array x = pe::from_host(data, {n});     // a copy of the caller's floats
 *   pe::array y = pe::exp(x) * 2.0f + 1.0f;     // recorded, not computed
 *   std::vector<float> v = y.to_vector<float>(); // computed here
 *
 * pe::array is a value type over one reference to a PE array: a copy
 * retains, the destructor releases, a move hands the reference over, so a
 * C++ program never leaks an array nor holds a temporary longer than the
 * expression that made it.
 *
 * The element-wise operations and reductions are the op catalog expanded
 * (pe_ops.def, the library's irformat/ops.def, installed beside this
 * header): every MAP op is a free function pe::<name>, every REDUCE op
 * pe::<name>(a) and pe::<name>(a, axis) — sum, prod, max_reduce, min_reduce,
 * mean, var, stddev, any, all, argmax, argmin, norm1, norm2, norminf; dot(a,
 * b), vdot(a, b).  Complex arrays (PE_C64, PE_C128: std::complex<float> /
 * <double> in host buffers, the same layout) take pe::complex(re, im),
 * conj, real, imag, arg and the ops pe.h lists; complex C++ scalars are no
 * operands (make a 0-d array with pe_scalar_c).  C++'s operator names give four of them other names: logical_and,
 * logical_or, logical_not, logical_xor.  Operands are arrays or C++
 * arithmetic scalars, which are weakly typed as in C (pe.h).  Operators:
 * + - * / % (pe_mod), unary -, == != < <= > >= (PE_BOOL arrays), & | ^
 * (logical, as NumPy's on booleans; `!a` is whether a holds an array, the
 * element-wise not is logical_not).
 *
 * Errors: a pe::session pushes an error handler that lets PE continue and
 * records the error; the call that raised it then throws pe::error (code,
 * message, and the caller's file and line).  Every call records the C++
 * caller's file and line as its site (__builtin_FILE/__builtin_LINE, g++
 * and clang++), so errors, profiles and PE's caches see user lines as from
 * C.  Without a session (pe_init called directly) errors follow pe.h: the
 * default handler prints and aborts.
 *
 * Host data in and out: pointer and length everywhere, std::vector, and
 * std::span where the library has it (C++20); adopt takes a buffer or a
 * std::vector over without a copy, read_release reads an array's last use
 * straight into the caller's buffer, pe::mapping<T> is pe_map/pe_unmap.
 *
 * The rest of pe.h: views and shape helpers, scans, sorts and bins as free
 * functions; the intrinsics matmul, lu (a pe::lu_factors) / lu_solve /
 * lu_cond / lu_unpack (a pe::lu_parts), fft / ifft, conv / correlate;
 * pe::rng (uniform, normal draws) and pe::csr (spmv) own a generator and a
 * sparse matrix as pe::array owns an array (movable, not copyable: a copy
 * would repeat draws or destroy a matrix twice); peek, reference, stats,
 * devices; pe::macro is PE_MACRO with the body a lambda.  Not here, on
 * purpose: pe_scope_begin/end and pe_keep (a scope's end releases references
 * that pe::array destructors would release again: RAII is C++'s scope), the
 * pe_f32_1d family (from_host), pe_last_error and the handler stack
 * (pe::session turns errors into pe::error).
 *
 * Lifetime: pe_shutdown frees everything still held.  Each handle object
 * (array, rng, csr, mapping, block) remembers the pe::session generation it
 * was made in; after that session has ended its destructor does nothing and
 * its handle is no longer passed to PE (get() is the null handle), so
 * objects may outlive their session — globals, members of longer-lived
 * objects — without an error at exit.  (With pe_init and pe_shutdown called
 * directly, no session ends: release them before pe_shutdown, as in C.) */
#ifndef PE_HPP
#define PE_HPP

#include <pe.h>

#include <atomic>
#include <complex>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>
#if defined(__has_include)
#if __has_include(<span>) && __cplusplus > 201703L
#include <span>
#endif
#endif

namespace pe {

/* ------------------------------------------------------------ errors */

class error : public std::runtime_error {
public:
    error(pe_status code, const std::string &message, std::string file, int line)
        : std::runtime_error(message), code_(code), file_(std::move(file)), line_(line)
    {
    }
    pe_status code() const noexcept { return code_; }
    const std::string &file() const noexcept { return file_; }
    int line() const noexcept { return line_; }

private:
    pe_status code_;
    std::string file_;
    int line_;
};

namespace detail {

struct pending_error {
    bool set = false;
    pe_status code = PE_OK;
    std::string message, file;
    int line = 0;
};
inline pending_error &pending()
{
    thread_local pending_error p;
    return p;
}

/* the session's handler: record, let PE continue (the failed operation's
 * result is an invalid array), and have the wrapper throw */
inline int record_error(const pe_error *e, void *)
{
    pending_error &p = pending();
    if (!p.set) { /* the first error of the call is the one to report */
        p.set = true;
        p.code = e->code;
        p.message = e->message ? e->message : "";
        p.file = e->file ? e->file : "";
        p.line = e->line;
    }
    return 1;
}

inline void raise_pending()
{
    pending_error &p = pending();
    if (!p.set) return;
    p.set = false;
    throw error(p.code, p.message, p.file, p.line);
}

/* Call sites: pe.h wants one pe_site object per call site with a stable
 * address (PE_HERE makes a static one).  C++ callers name theirs by
 * __builtin_FILE/__builtin_LINE; the site objects live here, one per
 * (file, line, function), for the process. */
struct site_key {
    const char *file;
    int line;
    const char *func;
    bool operator==(const site_key &o) const noexcept { return line == o.line && file == o.file && func == o.func; }
};
struct site_hash {
    std::size_t operator()(const site_key &k) const noexcept
    {
        return std::hash<const void *>()(k.file) ^ (std::hash<int>()(k.line) * 31u) ^ std::hash<const void *>()(k.func);
    }
};
inline const pe_site *intern_site(const char *file, int line, const char *func)
{
    /* never destroyed: as C's static sites, they live for the process (the
     * runtime keeps its record of each in it, and reads it at exit) */
    static std::mutex *mu = new std::mutex;
    static auto *sites = new std::unordered_map<site_key, pe_site *, site_hash>;
    std::lock_guard<std::mutex> lock(*mu);
    pe_site *&s = (*sites)[site_key{file, line, func}];
    if (!s) s = new pe_site{file, line, func, nullptr};
    return s;
}

/* Sessions ended so far.  pe_shutdown frees every array, generator and
 * matrix still held, so a C++ object that outlives its pe::session owns
 * nothing any more: each handle object remembers the count when it was made
 * and, once a session has ended since, neither releases nor uses its handle
 * (a destructor after the shutdown does nothing, as pe.hpp promises; a
 * handle of the old runtime is never passed to a new one, where its slot may
 * hold another array).  A count in the binding, not a query of the runtime:
 * pe.hpp knows when its sessions end, and a destructor stays one load and
 * one compare. */
inline std::atomic<uint64_t> &sessions_ended()
{
    static std::atomic<uint64_t> n{0};
    return n;
}
struct life_mark {
    uint64_t made = sessions_ended().load(std::memory_order_acquire);
    bool current() const noexcept { return made == sessions_ended().load(std::memory_order_acquire); }
};

/* A PE handle owned alone (a generator, a sparse matrix): movable, not
 * copyable (a copy would destroy it twice); Destroy at its end, nothing
 * after its session ended (the shutdown freed it). */
template <class H, void (*Destroy)(const pe_site *, H)> class unique_handle {
public:
    unique_handle() noexcept : h_{0} {}
    explicit unique_handle(H h) noexcept : h_(h) {}
    unique_handle(unique_handle &&o) noexcept : h_(o.h_), life_(o.life_) { o.h_ = H{0}; }
    unique_handle &operator=(unique_handle &&o) noexcept
    {
        std::swap(h_, o.h_);
        std::swap(life_, o.life_);
        return *this;
    }
    unique_handle(const unique_handle &) = delete;
    unique_handle &operator=(const unique_handle &) = delete;
    ~unique_handle()
    {
        if (alive()) Destroy(nullptr, h_);
    }
    H get() const noexcept { return alive() ? h_ : H{0}; }

private:
    bool alive() const noexcept { return h_.h != 0 && life_.current(); }
    H h_;
    life_mark life_;
};

} // namespace detail

/* The caller's file and line, as a default argument of every function. */
struct site {
    const pe_site *at;
    site(const char *file = __builtin_FILE(), int line = __builtin_LINE(), const char *func = __builtin_FUNCTION())
        : at(detail::intern_site(file, line, func))
    {
    }
};

/* -------------------------------------------------------------- arrays */

class array {
public:
    array() noexcept = default;
    /* takes over one reference the caller owns (a pe.h function's result) */
    explicit array(pe_array owned) noexcept : h_(owned) {}
    array(const array &o) : h_(o.alive() ? pe_retain_at(site().at, o.h_) : pe_array{0}) {}
    array(array &&o) noexcept : h_(o.h_), life_(o.life_) { o.h_ = pe_array{0}; }
    array &operator=(const array &o)
    {
        if (this != &o) array(o).swap(*this);
        return *this;
    }
    array &operator=(array &&o) noexcept
    {
        array(std::move(o)).swap(*this);
        return *this;
    }
    /* a reference the runtime freed at its shutdown is not released again */
    ~array()
    {
        if (alive()) pe_release_at(nullptr, h_);
    }
    void swap(array &o) noexcept
    {
        std::swap(h_, o.h_);
        std::swap(life_, o.life_);
    }

    /* the handle, still owned here; (pe_array){0} once the session that made
     * it ended (a later runtime's call then reports a null handle instead of
     * reaching whatever array took the slot) */
    pe_array get() const noexcept { return alive() ? h_ : pe_array{0}; }
    pe_array release() noexcept /* the reference, now the caller's */
    {
        pe_array h = get();
        h_ = pe_array{0};
        return h;
    }
    /* whether this holds an array of the running session */
    explicit operator bool() const noexcept { return alive(); }
    bool valid() const noexcept { return pe_is_valid(get()) != 0; }

    pe_dtype dtype(site s = site()) const { return checked(pe_dtype_of_at(s.at, get())); }
    int rank(site s = site()) const { return checked(pe_rank_at(s.at, get())); }
    int64_t dim(int axis, site s = site()) const { return checked(pe_dim_at(s.at, get(), axis)); }
    int64_t numel(site s = site()) const { return checked(pe_numel_at(s.at, get())); }
    std::vector<int64_t> shape(site s = site()) const
    {
        int64_t dims[PE_MAX_RANK];
        int rank = checked(pe_shape_at(s.at, get(), dims));
        return std::vector<int64_t>(dims, dims + (rank > 0 ? rank : 0));
    }
    /* the values as NumPy prints them (pe_print) */
    void print(FILE *f = stdout, site s = site()) const { check_read(pe_print_at(s.at, f, get())); }

    /* the value, computed if need be, into n elements at dst (n must be numel;
     * T the element: float, double, int32_t, bool or unsigned char for
     * PE_BOOL, std::complex<float> / <double> for PE_C64 / PE_C128) */
    template <class T> void read(T *dst, std::size_t n, site s = site()) const
    {
        check_read(pe_read_at(s.at, get(), dst, n * sizeof(T)));
    }
    template <class T> std::vector<T> to_vector(site s = site()) const
    {
        std::vector<T> v(static_cast<std::size_t>(numel(s)));
        read(v.data(), v.size(), s);
        return v;
    }
    /* read, then let the reference go (pe_read_release): the read is the
     * array's last use, so a value still to be computed is computed straight
     * into dst; this array is empty after it, whatever the read returned */
    template <class T> void read_release(T *dst, std::size_t n, site s = site())
    {
        pe_array h = release();
        check_read(pe_read_release_at(s.at, h, dst, n * sizeof(T)));
    }
    template <class T> std::vector<T> release_to_vector(site s = site())
    {
        std::vector<T> v(static_cast<std::size_t>(numel(s)));
        read_release(v.data(), v.size(), s);
        return v;
    }
    /* the value the reference interpreter computes from a clone of the
     * pending expression (pe_peek): the work queue is left as it was */
    template <class T> void peek(T *dst, std::size_t n, site s = site()) const
    {
        check_read(pe_peek_at(s.at, get(), dst, n * sizeof(T)));
    }
#ifdef __cpp_lib_span
    template <class T> void read(std::span<T> dst, site s = site()) const { read(dst.data(), dst.size(), s); }
    template <class T> void read_release(std::span<T> dst, site s = site()) { read_release(dst.data(), dst.size(), s); }
    template <class T> void peek(std::span<T> dst, site s = site()) const { peek(dst.data(), dst.size(), s); }
#endif
    /* a one-element array's value, of any real dtype, as double (pe_read_f64)
     * or float (pe_read_f32) */
    template <class T = double> T item(site s = site()) const
    {
        static_assert(std::is_same<T, double>::value || std::is_same<T, float>::value, "item<double> or item<float>");
        T v = 0;
        if constexpr (std::is_same<T, double>::value) check_read(pe_read_f64_at(s.at, get(), &v));
        else check_read(pe_read_f32_at(s.at, get(), &v));
        return v;
    }

private:
    template <class R> static R checked(R r)
    {
        detail::raise_pending();
        return r;
    }
    static void check_read(int rc)
    {
        detail::raise_pending();
        if (rc != PE_OK) throw error(static_cast<pe_status>(rc), "pe: the read failed", "", 0);
    }
    bool alive() const noexcept { return h_.h != 0 && life_.current(); }
    pe_array h_{0};
    detail::life_mark life_;
};

namespace detail {
/* a pe.h result: an owning array, or the error the call raised */
inline array wrap(pe_array h)
{
    array a(h);
    raise_pending();
    return a;
}
template <class T> struct is_complex : std::false_type {};
template <class T> struct is_complex<std::complex<T>> : std::true_type {};
template <class T> constexpr bool is_scalar_v = std::is_arithmetic<T>::value || is_complex<T>::value;
} // namespace detail

} // namespace pe

/* pe.h declares its weak complex constants for C only (they take C99
 * complex values); g++ and clang++ know the same types as __complex__, with
 * the layout and calling convention of C's, so the binding declares them. */
extern "C" {
pe_array pe__weak_c64(__complex__ float v);
pe_array pe__weak_c128(__complex__ double v);
}

namespace pe {
namespace detail {
inline __complex__ float c99(std::complex<float> v)
{
    __complex__ float z;
    __real__ z = v.real();
    __imag__ z = v.imag();
    return z;
}
inline __complex__ double c99(std::complex<double> v)
{
    __complex__ double z;
    __real__ z = v.real();
    __imag__ z = v.imag();
    return z;
}
} // namespace detail

/* An operand: an array (borrowed) or a C++ scalar, which becomes PE's weakly
 * typed 0-d constant (the operation consumes it) — std::complex ones too, as
 * C's complex scalars: a std::complex<float> with a c128 array stays c128,
 * with a real array it gives c64 (pe.h). */
class operand {
public:
    operand(const array &a) noexcept : h_(a.get()) {}
    operand(float v) : h_(pe__weak_f32(v)) {}
    operand(double v) : h_(pe__weak_f64(v)) {}
    operand(long double v) : h_(pe__weak_f64(static_cast<double>(v))) {}
    operand(std::complex<float> v) : h_(pe__weak_c64(detail::c99(v))) {}
    operand(std::complex<double> v) : h_(pe__weak_c128(detail::c99(v))) {}
    operand(std::complex<long double> v) : h_(pe__weak_c128(detail::c99(std::complex<double>(v)))) {}
    template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
    operand(T v) : h_(pe__weak_int(static_cast<long long>(v)))
    {
    }
    pe_array get() const noexcept { return h_; }

private:
    pe_array h_;
};

/* ------------------------------------------------------ creation, I/O */

inline array from_host(pe_dtype t, std::initializer_list<int64_t> shape, const void *data, site s = site())
{
    return detail::wrap(pe_from_host_at(s.at, t, static_cast<int>(shape.size()), shape.begin(), data));
}
namespace detail {
template <class T> constexpr pe_dtype dtype_of()
{
    static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value || std::is_same<T, int32_t>::value ||
                      std::is_same<T, unsigned char>::value || std::is_same<T, bool>::value ||
                      std::is_same<T, std::complex<float>>::value || std::is_same<T, std::complex<double>>::value,
                  "PE holds float, double, int32_t, bool (one byte), std::complex<float> and <double> elements");
    return std::is_same<T, float>::value                  ? PE_F32
           : std::is_same<T, double>::value               ? PE_F64
           : std::is_same<T, int32_t>::value              ? PE_I32
           : std::is_same<T, std::complex<float>>::value  ? PE_C64
           : std::is_same<T, std::complex<double>>::value ? PE_C128
                                                          : PE_BOOL;
}
} // namespace detail
/* a copy of the elements at data, of the given shape */
template <class T> array from_host(const T *data, std::initializer_list<int64_t> shape, site s = site())
{
    return from_host(detail::dtype_of<T>(), shape, data, s);
}
template <class T> array from_vector(const std::vector<T> &v, site s = site())
{
    return from_host(v.data(), {static_cast<int64_t>(v.size())}, s);
}
#ifdef __cpp_lib_span
template <class T> array from_span(std::span<const T> v, site s = site())
{
    return from_host(v.data(), {static_cast<int64_t>(v.size())}, s);
}
#endif
inline array fill(pe_dtype t, std::initializer_list<int64_t> shape, double v, site s = site())
{
    return detail::wrap(pe_fill_at(s.at, t, static_cast<int>(shape.size()), shape.begin(), v));
}
inline array scalar(pe_dtype t, double v, site s = site()) { return detail::wrap(pe_scalar_at(s.at, t, v)); }
/* complex constants (t: PE_C64 or PE_C128): pe_scalar_c, pe_fill_c */
inline array scalar(pe_dtype t, std::complex<double> v, site s = site())
{
    return detail::wrap(pe_scalar_c_at(s.at, t, v.real(), v.imag()));
}
inline array fill(pe_dtype t, std::initializer_list<int64_t> shape, std::complex<double> v, site s = site())
{
    return detail::wrap(pe_fill_c_at(s.at, t, static_cast<int>(shape.size()), shape.begin(), v.real(), v.imag()));
}
/* the buffer at data taken over, not copied (pe_adopt): PE calls
 * free_fn(data, ctx) when its last use is done.  When the call fails the
 * buffer stays the caller's (the exception says so before anything took it). */
inline array adopt(pe_dtype t, std::initializer_list<int64_t> shape, void *data, void (*free_fn)(void *data, void *ctx),
                   void *ctx, site s = site())
{
    return detail::wrap(pe_adopt_at(s.at, t, static_cast<int>(shape.size()), shape.begin(), data, free_fn, ctx));
}
/* a vector's elements taken over without a copy, as an array of the given
 * shape (its size: the number of elements); the vector is left empty */
template <class T> array adopt(std::vector<T> &&v, std::initializer_list<int64_t> shape, site s = site())
{
    auto *held = new std::vector<T>(std::move(v));
    void (*free_fn)(void *, void *) = [](void *, void *ctx) { delete static_cast<std::vector<T> *>(ctx); };
    pe_array h = pe_adopt_at(s.at, detail::dtype_of<T>(), static_cast<int>(shape.size()), shape.begin(), held->data(),
                             free_fn, held);
    if (detail::pending().set) delete held; /* refused: PE did not take it */
    return detail::wrap(h);
}
template <class T> array adopt(std::vector<T> &&v, site s = site())
{
    int64_t n = static_cast<int64_t>(v.size());
    return adopt(std::move(v), {n}, s);
}
inline array index(pe_dtype t, std::initializer_list<int64_t> shape, int axis, site s = site())
{
    return detail::wrap(pe_index_at(s.at, t, static_cast<int>(shape.size()), shape.begin(), axis));
}
inline array identity(pe_dtype t, int64_t n, site s = site()) { return detail::wrap(pe_identity_at(s.at, t, n)); }

/* ------------------------------------- the op catalog (pe_ops.def) */

/* C++'s alternative operator names cannot name functions: these four ops
 * get other names.  (A probe: PE_HPP_RENAMED_<name> exists only for them.) */
#define PE_HPP_RENAMED_and ~, logical_and
#define PE_HPP_RENAMED_or ~, logical_or
#define PE_HPP_RENAMED_not ~, logical_not
#define PE_HPP_RENAMED_xor ~, logical_xor
#define PE_HPP_SECOND(a, b, ...) b
#define PE_HPP_PICK(...) PE_HPP_SECOND(__VA_ARGS__)
#define PE_HPP_NAME(name) PE_HPP_PICK(PE_HPP_RENAMED_##name, name, ~)

#define PE_HPP_MAP_1(name, cname)                                                                       \
    inline array cname(const operand &a, site s = site()) { return detail::wrap(pe_##name##_at(s.at, a.get())); }
#define PE_HPP_MAP_2(name, cname)                                                                       \
    inline array cname(const operand &a, const operand &b, site s = site())                              \
    {                                                                                                   \
        return detail::wrap(pe_##name##_at(s.at, a.get(), b.get()));                                    \
    }
#define PE_HPP_MAP_3(name, cname)                                                                       \
    inline array cname(const operand &a, const operand &b, const operand &c, site s = site())            \
    {                                                                                                   \
        return detail::wrap(pe_##name##_at(s.at, a.get(), b.get(), c.get()));                           \
    }
#define PE_HPP_REDUCE_1(name, cname)                                                                    \
    inline array cname(const array &a, site s = site()) { return detail::wrap(pe_##name##_at(s.at, a.get())); } \
    inline array cname(const array &a, int axis, site s = site())                                       \
    {                                                                                                   \
        return detail::wrap(pe_##name##_axis_at(s.at, a.get(), axis));                                  \
    }
#define PE_HPP_REDUCE_2(name, cname)                                                                    \
    inline array cname(const operand &a, const operand &b, site s = site())                              \
    {                                                                                                   \
        return detail::wrap(pe_##name##_at(s.at, a.get(), b.get()));                                    \
    }
/* rows by kind; a result given by the request (cast) is written below */
#define PE_HPP_MAP(name, arity, result) PE_HPP_MAP_##result(name, arity)
#define PE_HPP_MAP_ARITH(name, arity) PE_HPP_MAP_##arity(name, PE_HPP_NAME(name))
#define PE_HPP_MAP_FLOAT(name, arity) PE_HPP_MAP_##arity(name, PE_HPP_NAME(name))
#define PE_HPP_MAP_BOOL(name, arity) PE_HPP_MAP_##arity(name, PE_HPP_NAME(name))
#define PE_HPP_MAP_SAME(name, arity) PE_HPP_MAP_##arity(name, PE_HPP_NAME(name))
#define PE_HPP_MAP_COMPLEX(name, arity) PE_HPP_MAP_##arity(name, PE_HPP_NAME(name))
#define PE_HPP_MAP_INDEX(name, arity) PE_HPP_MAP_##arity(name, PE_HPP_NAME(name))
#define PE_HPP_MAP_EXPLICIT(name, arity)
#define PE_HPP_REDUCE(name, arity, result) PE_HPP_REDUCE_##arity(name, name)
#define PE_HPP_IO(name, arity, result)
#define PE_HPP_GENERATOR(name, arity, result)
#define PE_HPP_VIEW(name, arity, result)
#define PE_HPP_INTRINSIC(name, arity, result)
#define PE_OP(name, kind, arity, fusible, cost, result) PE_HPP_##kind(name, arity, result)
#include "pe_ops.def"
#undef PE_OP
#undef PE_HPP_MAP_1
#undef PE_HPP_MAP_2
#undef PE_HPP_MAP_3
#undef PE_HPP_REDUCE_1
#undef PE_HPP_REDUCE_2

inline array cast(const array &a, pe_dtype t, site s = site()) { return detail::wrap(pe_cast_at(s.at, a.get(), t)); }

/* --------------------------------------------------------- operators */

namespace detail {
/* An operator's array operand with the operator's call site: operators
 * take no default arguments, but the conversion to this type, made where
 * the operator is written, evaluates its constructor's. */
struct located {
    const array &a;
    site s;
    located(const array &a, site s = site()) : a(a), s(s) {}
};
} // namespace detail

#define PE_HPP_OPERATOR(op, name)                                                                         \
    inline array operator op(const detail::located &a, const operand &b) { return name(a.a, b, a.s); }  \
    template <class T, std::enable_if_t<detail::is_scalar_v<T>, int> = 0>                                \
    array operator op(T a, const detail::located &b)                                                      \
    {                                                                                                     \
        return name(a, b.a, b.s);                                                                         \
    }
PE_HPP_OPERATOR(+, add)
PE_HPP_OPERATOR(-, sub)
PE_HPP_OPERATOR(*, mul)
PE_HPP_OPERATOR(/, div)
PE_HPP_OPERATOR(%, mod)
PE_HPP_OPERATOR(==, eq)
PE_HPP_OPERATOR(!=, ne)
PE_HPP_OPERATOR(<, lt)
PE_HPP_OPERATOR(<=, le)
PE_HPP_OPERATOR(>, gt)
PE_HPP_OPERATOR(>=, ge)
PE_HPP_OPERATOR(&, logical_and)
PE_HPP_OPERATOR(|, logical_or)
PE_HPP_OPERATOR(^, logical_xor)
#undef PE_HPP_OPERATOR
inline array operator-(const detail::located &a) { return neg(a.a, a.s); }
/* no operator!: !a is whether a holds an array (explicit operator bool), as
 * for a smart pointer; the element-wise not is logical_not(a) */

/* ------------------------------------------------------------- views */

inline array reshape(const array &a, std::initializer_list<int64_t> shape, site s = site())
{
    return detail::wrap(pe_reshape_at(s.at, a.get(), static_cast<int>(shape.size()), shape.begin()));
}
inline array transpose(const array &a, site s = site()) { return detail::wrap(pe_transpose_at(s.at, a.get())); }
inline array slice(const array &a, std::initializer_list<int64_t> start, std::initializer_list<int64_t> count, site s = site())
{
    return detail::wrap(pe_slice_at(s.at, a.get(), start.begin(), count.begin()));
}
inline array slice_step(const array &a, std::initializer_list<int64_t> start, std::initializer_list<int64_t> count,
                        std::initializer_list<int64_t> step, site s = site())
{
    return detail::wrap(pe_slice_step_at(s.at, a.get(), start.begin(), count.begin(), step.begin()));
}
inline array permute(const array &a, std::initializer_list<int> axes, site s = site())
{
    return detail::wrap(pe_permute_at(s.at, a.get(), axes.begin()));
}
inline array periodic(const array &a, std::initializer_list<int64_t> shape, site s = site())
{
    return detail::wrap(pe_periodic_at(s.at, a.get(), static_cast<int>(shape.size()), shape.begin()));
}
inline array spread(const array &a, int axis, int64_t n, site s = site()) { return detail::wrap(pe_spread_at(s.at, a.get(), axis, n)); }
inline array gather(const array &a, const array &index, site s = site())
{
    return detail::wrap(pe_gather_at(s.at, a.get(), index.get()));
}
inline array concat(const array &a, const array &b, int axis, site s = site())
{
    return detail::wrap(pe_concat_at(s.at, a.get(), b.get(), axis));
}
inline array expand_dims(const array &a, int axis, site s = site()) { return detail::wrap(pe_expand_dims_at(s.at, a.get(), axis)); }
inline array roll(const array &a, int64_t shift, int axis, site s = site()) { return detail::wrap(pe_roll_at(s.at, a.get(), shift, axis)); }
inline array pad(const array &a, int axis, int64_t before, int64_t after, pe_pad_mode mode = PE_PAD_CONSTANT, double value = 0,
                 site s = site())
{
    return detail::wrap(pe_pad_at(s.at, a.get(), axis, before, after, mode, value));
}
inline array slice_update(const array &a, const array &v, std::initializer_list<int64_t> start, site s = site())
{
    return detail::wrap(pe_slice_update_at(s.at, a.get(), v.get(), start.begin()));
}

/* ------------------------------------------- composed functions, generators */

inline array sigmoid(const operand &a, site s = site()) { return detail::wrap(pe_sigmoid_at(s.at, a.get())); }
inline array softmax(const array &a, int axis, site s = site()) { return detail::wrap(pe_softmax_at(s.at, a.get(), axis)); }
inline array logsumexp(const array &a, int axis, site s = site()) { return detail::wrap(pe_logsumexp_at(s.at, a.get(), axis)); }
inline array arange(pe_dtype t, double start, double stop, double step = 1.0, site s = site())
{
    return detail::wrap(pe_arange_at(s.at, t, start, stop, step));
}
inline array linspace(pe_dtype t, double lo, double hi, int64_t n, site s = site())
{
    return detail::wrap(pe_linspace_at(s.at, t, lo, hi, n));
}

/* ------------------------------------------- scans, sorts, bins */

inline array cumsum(const array &a, int axis, site s = site()) { return detail::wrap(pe_cumsum_at(s.at, a.get(), axis)); }
inline array cumprod(const array &a, int axis, site s = site()) { return detail::wrap(pe_cumprod_at(s.at, a.get(), axis)); }
inline array sort(const array &a, int axis = -1, bool descending = false, site s = site())
{
    return detail::wrap(pe_sort_at(s.at, a.get(), axis, descending));
}
inline array argsort(const array &a, int axis = -1, bool descending = false, site s = site())
{
    return detail::wrap(pe_argsort_at(s.at, a.get(), axis, descending));
}
inline array histogram(const array &a, int64_t bins, double lo, double hi, site s = site())
{
    return detail::wrap(pe_histogram_at(s.at, a.get(), bins, lo, hi));
}
/* counts of each index (weights left out) or sums of their weights */
inline array bincount(const array &idx, int64_t length, site s = site())
{
    return detail::wrap(pe_bincount_at(s.at, idx.get(), pe_array{0}, length));
}
inline array bincount(const array &idx, const array &weights, int64_t length, site s = site())
{
    return detail::wrap(pe_bincount_at(s.at, idx.get(), weights.get(), length));
}
inline array scatter_add(const array &target, const array &idx, const operand &values, site s = site())
{
    return detail::wrap(pe_scatter_add_at(s.at, target.get(), idx.get(), values.get()));
}

/* ---------------------------------------- automatic differentiation
 * pe.h's pe_grad_enable, pe_grad, pe_jvp: y = pe::grad_enable(x) marks x
 * (a new reference); pe::grad gives d(sum of y)/d each variable, in their
 * order; pe::jvp the derivative of y along the tangents. */
inline array grad_enable(const array &x, site s = site()) { return detail::wrap(pe_grad_enable_at(s.at, x.get())); }
inline std::vector<array> grad(const array &y, const std::vector<array> &wrt, site s = site())
{
    std::vector<pe_array> in(wrt.size()), out(wrt.size(), pe_array{0});
    for (size_t i = 0; i < wrt.size(); i++) in[i] = wrt[i].get();
    pe_grad_at(s.at, y.get(), static_cast<int>(wrt.size()), in.data(), out.data());
    std::vector<array> result;
    result.reserve(out.size());
    for (pe_array h : out) result.emplace_back(h); /* owned before an error is thrown */
    detail::raise_pending();
    return result;
}
inline array jvp(const array &y, const std::vector<array> &wrt, const std::vector<array> &tangents, site s = site())
{
    if (tangents.size() != wrt.size()) throw error(PE_E_ARG, "pe: pe::jvp needs a tangent per variable", "", 0);
    std::vector<pe_array> in(wrt.size()), t(wrt.size());
    for (size_t i = 0; i < wrt.size(); i++) in[i] = wrt[i].get(), t[i] = tangents[i].get();
    return detail::wrap(pe_jvp_at(s.at, y.get(), static_cast<int>(wrt.size()), in.data(), t.data()));
}

/* ------------------------------------------------------------ intrinsics
 * Library calls (pe.h, "intrinsics"): f32, f64, c64 and c128, operands of
 * one dtype. */

/* a (m x k) @ b (k x n, or a vector of k) */
inline array matmul(const array &a, const array &b, site s = site())
{
    return detail::wrap(pe_matmul_at(s.at, a.get(), b.get()));
}
/* P a = L U (pe_lu): L and U packed in lu, pivots (i32) the row interchanges */
struct lu_factors {
    array lu, pivots;
};
inline lu_factors lu(const array &a, site s = site())
{
    pe_array f{0}, p{0};
    pe_lu_at(s.at, a.get(), &f, &p); /* an error is raised, and thrown below, with both results owned */
    lu_factors r{array(f), array(p)};
    detail::raise_pending();
    return r;
}
/* x with a x = b (b: n or n x k) */
inline array lu_solve(const array &lu, const array &pivots, const array &b, site s = site())
{
    return detail::wrap(pe_lu_solve_at(s.at, lu.get(), pivots.get(), b.get()));
}
inline array lu_solve(const lu_factors &f, const array &b, site s = site()) { return lu_solve(f.lu, f.pivots, b, s); }
/* the 1-norm condition number as LAPACK's gecon estimates it */
inline array lu_cond(const array &lu, const array &pivots, site s = site())
{
    return detail::wrap(pe_lu_cond_at(s.at, lu.get(), pivots.get()));
}
inline array lu_cond(const lu_factors &f, site s = site()) { return lu_cond(f.lu, f.pivots, s); }
/* P, L (unit lower) and U with P a = L U */
struct lu_parts {
    array p, l, u;
};
inline lu_parts lu_unpack(const array &lu, const array &pivots, site s = site())
{
    pe_array l{0}, u{0};
    pe_array p = pe_lu_unpack_at(s.at, lu.get(), pivots.get(), &l, &u);
    lu_parts r{array(p), array(l), array(u)};
    detail::raise_pending();
    return r;
}
inline lu_parts lu_unpack(const lu_factors &f, site s = site()) { return lu_unpack(f.lu, f.pivots, s); }

/* the DFT along the last axis (dims 1) or the last two (dims 2), NumPy's
 * fft / fft2; ifft the inverse, scaled (ifft(fft(a)) is a) */
inline array fft(const array &a, int dims = 1, site s = site()) { return detail::wrap(pe_fft_at(s.at, a.get(), dims)); }
inline array ifft(const array &a, int dims = 1, site s = site()) { return detail::wrap(pe_ifft_at(s.at, a.get(), dims)); }
/* scipy.signal's convolve / correlate, mode 'same', over a's last 1 or 2 axes */
inline array conv(const array &a, const array &kernel, site s = site())
{
    return detail::wrap(pe_conv_at(s.at, a.get(), kernel.get()));
}
inline array correlate(const array &a, const array &kernel, site s = site())
{
    return detail::wrap(pe_correlate_at(s.at, a.get(), kernel.get()));
}

/* ------------------------------------------------------- random numbers */

/* A counter-based generator (pe_rng_create; pe.h, "random numbers"): each
 * draw advances it, so draws are non-const.  Movable, not copyable: a copy
 * would repeat the same draws.  pe_rng_destroy at its end (nothing after
 * its session ended: the shutdown freed it). */
class rng {
public:
    rng() noexcept = default; /* none: a generator may be moved in */
    explicit rng(uint64_t seed, pe_rng_kind kind = PE_RNG_PHILOX, site s = site()) : h_(pe_rng_create_at(s.at, kind, seed))
    {
        detail::raise_pending();
    }
    pe_rng get() const noexcept { return h_.get(); }

    /* [0, 1) for PE_F32 / PE_F64; for PE_I32 every value equally likely */
    array uniform(pe_dtype t, std::initializer_list<int64_t> shape, site s = site())
    {
        return detail::wrap(pe_rng_uniform_at(s.at, get(), t, static_cast<int>(shape.size()), shape.begin()));
    }
    /* standard normal (Box-Muller), PE_F32 or PE_F64 */
    array normal(pe_dtype t, std::initializer_list<int64_t> shape, site s = site())
    {
        return detail::wrap(pe_rng_normal_at(s.at, get(), t, static_cast<int>(shape.size()), shape.begin()));
    }

private:
    detail::unique_handle<pe_rng, pe_rng_destroy_at> h_;
};

/* -------------------------------------------------------- sparse matrices */

/* A CSR matrix (pe_csr_create): row_ptr (i32, rows + 1), col_idx (i32, nnz),
 * values (f32 or f64, nnz), n_cols columns.  It holds its own references to
 * the three arrays; pe_csr_destroy at its end.  Movable, not copyable (one
 * matrix, one destroy). */
class csr {
public:
    csr() noexcept = default; /* none: a matrix may be moved in */
    csr(const array &row_ptr, const array &col_idx, const array &values, int64_t n_cols, site s = site())
        : h_(pe_csr_create_at(s.at, row_ptr.get(), col_idx.get(), values.get(), n_cols))
    {
        detail::raise_pending();
    }
    pe_csr get() const noexcept { return h_.get(); }

private:
    detail::unique_handle<pe_csr, pe_csr_destroy_at> h_;
};
/* m @ x: each row's sum in column order */
inline array spmv(const csr &m, const array &x, site s = site()) { return detail::wrap(pe_spmv_at(s.at, m.get(), x.get())); }

/* ------------------------------------------------------ host views, debugging */

/* A read-only host view of an array's value (pe_map) until the guard ends
 * (pe_unmap); it holds a reference, so the array lives as long.  T as for
 * array::read. */
template <class T> class mapping {
public:
    explicit mapping(const array &a, site s = site()) : a_(a), n_(0)
    {
        data_ = static_cast<const T *>(pe_map_at(s.at, a_.get()));
        detail::raise_pending();
        n_ = static_cast<std::size_t>(a_.numel(s));
    }
    ~mapping()
    {
        if (data_ && a_) pe_unmap_at(nullptr, a_.get());
    }
    mapping(const mapping &) = delete;
    mapping &operator=(const mapping &) = delete;
    const T *data() const noexcept { return data_; }
    std::size_t size() const noexcept { return n_; }
    const T &operator[](std::size_t i) const noexcept { return data_[i]; }
    const T *begin() const noexcept { return data_; }
    const T *end() const noexcept { return data_ + n_; }

private:
    array a_;
    const T *data_ = nullptr;
    std::size_t n_;
};
template <class T> mapping<T> map(const array &a, site s = site()) { return mapping<T>(a, s); }

/* a's reference result, computed on the interpreter (pe_reference) */
inline array reference(const array &a, site s = site()) { return detail::wrap(pe_reference_at(s.at, a.get())); }

/* ------------------------------------------------- code reuse sections */

/* PE_MACRO (pe.h, "code reuse sections") as a function:
 *
 *   std::vector<pe::array> out = pe::macro("step", {acc, y}, 1, [&](const std::vector<pe::array> &in) {
 *       return std::vector<pe::array>{in[0] * 0.5 + pe::sin(in[1])};
 *   }, &mode, sizeof mode);
 *
 * The first execution with a key (the inputs' dtypes, shapes and uniform
 * constants, the ctl_bytes at ctl) runs the body and records it; later ones
 * replay the recording without calling the body.  The body gets its own
 * references to the inputs and returns n_outs arrays (one it made, or an
 * input), or one pe::array when n_outs is 1; the section is named by the
 * call's site, as C's by the statement's.  The rules are C's: no host data
 * in the body (the read throws PE_E_MACRO and the section goes on as plain
 * code), operands from outside only as inputs, values that change between
 * executions as inputs or in ctl (compared byte for byte: padding too).
 * Arrays the body drops are released by their destructors inside it, as a
 * C body's scope end would; an exception leaving the body ends the section
 * (nothing cached) and goes on. */
template <class Body>
std::vector<array> macro(const char *name, const std::vector<array> &ins, int n_outs, Body &&body, const void *ctl,
                         std::size_t ctl_bytes, site s = site())
{
    std::vector<pe_array> in_h(ins.size()), out_h(n_outs > 0 ? static_cast<std::size_t>(n_outs) : 0, pe_array{0});
    for (std::size_t k = 0; k < ins.size(); k++) in_h[k] = ins[k].get();
    auto owned_outputs = [&out_h] { /* PE's output handles, each one reference for the caller */
        std::vector<array> r;
        r.reserve(out_h.size());
        for (pe_array h : out_h) r.emplace_back(h);
        return r;
    };
    int self = 0; /* this execution's anchor: a recursive call has its own, so PE tells recursion from re-entry */
    pe_macro_state st = pe_macro_begin_at(s.at, &self, name, in_h.data(), static_cast<int>(in_h.size()), out_h.data(),
                                          n_outs, ctl, ctl_bytes);
    while (st.run_body) {
        try {
            /* retained inside the body, so the recording counts them (and their release) as the body's */
            std::vector<array> body_ins;
            body_ins.reserve(in_h.size());
            for (pe_array h : in_h) body_ins.emplace_back(pe_retain_at(s.at, h));
            const std::vector<array> &in = body_ins;
            std::vector<array> outs;
            if constexpr (std::is_same<std::decay_t<decltype(body(in))>, array>::value) outs.push_back(body(in));
            else outs = body(in);
            /* the references go to the section: its end keeps one per output for the caller */
            for (std::size_t j = 0; j < out_h.size() && j < outs.size(); j++) out_h[j] = outs[j].release();
        } catch (...) {
            pe_macro_end_at(s.at, &st);
            detail::pending().set = false; /* the exception in flight is the error to report */
            owned_outputs();                /* invalid ones where the section had begun: released */
            throw;
        }
        st.run_body = pe_macro_end_at(s.at, &st);
    }
    std::vector<array> outs = owned_outputs();
    detail::raise_pending();
    return outs;
}
template <class Body>
std::vector<array> macro(const char *name, const std::vector<array> &ins, int n_outs, Body &&body, site s = site())
{
    return macro(name, ins, n_outs, std::forward<Body>(body), nullptr, 0, s);
}

/* ------------------------------------------- runtime and devices */

inline const char *version() noexcept { return pe_version(); }
inline const char *status_name(pe_status code) noexcept { return pe_status_name(code); }
/* the runtime's counters (pe_get_stats) */
inline pe_stats stats() noexcept
{
    pe_stats st;
    pe_get_stats(&st);
    return st;
}
/* the CPU is device 0, CUDA devices follow */
inline int device_count() noexcept { return pe_device_count(); }
inline pe_device_info device_info(int dev, site s = site())
{
    pe_device_info info;
    std::memset(&info, 0, sizeof info);
    pe_device_info_at(s.at, dev, &info);
    detail::raise_pending();
    return info;
}
/* the preferred device for following work; -1: automatic */
inline void set_device(int dev, site s = site()) { pe_set_device_at(s.at, dev), detail::raise_pending(); }

/* ------------------------------------------- hints and synchronisation */

inline void flush(site s = site()) { pe_flush_at(s.at), detail::raise_pending(); }
inline void sync(site s = site()) { pe_sync_at(s.at), detail::raise_pending(); }
inline void hint_read(const array &a, site s = site()) { pe_hint_read_at(s.at, a.get()), detail::raise_pending(); }
/* pe_block_begin ... pe_block_end for the guard's life */
class block {
public:
    explicit block(site s = site()) : end_(s) { pe_block_begin_at(s.at), detail::raise_pending(); }
    ~block()
    {
        if (life_.current()) pe_block_end_at(end_.at); /* a shutdown ended the block with everything else */
    }
    block(const block &) = delete;
    block &operator=(const block &) = delete;

private:
    site end_;
    detail::life_mark life_;
};

/* --------------------------------------------------------------- session */

/* pe_init and the handler that turns errors into exceptions; pe_shutdown
 * when it ends, which frees the arrays, generators and matrices still held:
 * their C++ objects, once the session has ended, own nothing (their
 * destructors do nothing). */
class session {
public:
    explicit session(const pe_config *config = nullptr)
    {
        pe_push_error_handler(detail::record_error, nullptr);
        int rc = pe_init(config);
        if (rc != PE_OK) {
            detail::pending().set = false;
            pe_pop_error_handler();
            throw error(static_cast<pe_status>(rc), "pe: pe_init failed", "", 0);
        }
    }
    ~session()
    {
        pe_shutdown();
        detail::sessions_ended().fetch_add(1, std::memory_order_acq_rel); /* what is still held is gone */
        pe_pop_error_handler();
        detail::pending().set = false;
    }
    session(const session &) = delete;
    session &operator=(const session &) = delete;
};

} // namespace pe

#undef PE_HPP_RENAMED_and
#undef PE_HPP_RENAMED_or
#undef PE_HPP_RENAMED_not
#undef PE_HPP_RENAMED_xor

#endif /* PE_HPP */
