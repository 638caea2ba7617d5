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
 * std::span where the library has it (C++20). */
#ifndef PE_HPP
#define PE_HPP

#include <pe.h>

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
    array(const array &o) : h_(o.h_.h ? pe_retain_at(site().at, o.h_) : o.h_) {}
    array(array &&o) noexcept : h_(o.h_) { o.h_ = pe_array{0}; }
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
    ~array()
    {
        if (h_.h) pe_release_at(nullptr, h_);
    }
    void swap(array &o) noexcept { std::swap(h_, o.h_); }

    pe_array get() const noexcept { return h_; }    /* the handle, still owned here */
    pe_array release() noexcept                     /* the reference, now the caller's */
    {
        pe_array h = h_;
        h_ = pe_array{0};
        return h;
    }
    explicit operator bool() const noexcept { return h_.h != 0; }
    bool valid() const noexcept { return pe_is_valid(h_) != 0; }

    pe_dtype dtype(site s = site()) const { return checked(pe_dtype_of_at(s.at, h_)); }
    int rank(site s = site()) const { return checked(pe_rank_at(s.at, h_)); }
    int64_t dim(int axis, site s = site()) const { return checked(pe_dim_at(s.at, h_, axis)); }
    int64_t numel(site s = site()) const { return checked(pe_numel_at(s.at, h_)); }
    std::vector<int64_t> shape(site s = site()) const
    {
        int64_t dims[PE_MAX_RANK];
        int rank = checked(pe_shape_at(s.at, h_, dims));
        return std::vector<int64_t>(dims, dims + (rank > 0 ? rank : 0));
    }
    /* the values as NumPy prints them (pe_print) */
    void print(FILE *f = stdout, site s = site()) const { check_read(pe_print_at(s.at, f, h_)); }

    /* the value, computed if need be, into n elements at dst (n must be numel) */
    template <class T> void read(T *dst, std::size_t n, site s = site()) const
    {
        check_read(pe_read_at(s.at, h_, dst, n * sizeof(T)));
    }
    template <class T> std::vector<T> to_vector(site s = site()) const
    {
        std::vector<T> v(static_cast<std::size_t>(numel(s)));
        read(v.data(), v.size(), s);
        return v;
    }
#ifdef __cpp_lib_span
    template <class T> void read(std::span<T> dst, site s = site()) const { read(dst.data(), dst.size(), s); }
#endif
    /* a one-element array's value */
    double item(site s = site()) const
    {
        double v = 0;
        check_read(pe_read_f64_at(s.at, h_, &v));
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
    pe_array h_{0};
};

namespace detail {
/* a pe.h result: an owning array, or the error the call raised */
inline array wrap(pe_array h)
{
    array a(h);
    raise_pending();
    return a;
}
template <class T> constexpr bool is_scalar_v = std::is_arithmetic<T>::value;
} // namespace detail

/* An operand: an array (borrowed) or a C++ scalar, which becomes PE's weakly
 * typed 0-d constant (the operation consumes it). */
class operand {
public:
    operand(const array &a) noexcept : h_(a.get()) {}
    operand(float v) : h_(pe__weak_f32(v)) {}
    operand(double v) : h_(pe__weak_f64(v)) {}
    operand(long double v) : h_(pe__weak_f64(static_cast<double>(v))) {}
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
                      std::is_same<T, unsigned char>::value || std::is_same<T, bool>::value,
                  "PE holds float, double, int32_t and bool (one byte) elements");
    return std::is_same<T, float>::value ? PE_F32 : std::is_same<T, double>::value ? PE_F64 : std::is_same<T, int32_t>::value ? PE_I32 : PE_BOOL;
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

/* ------------------------------------------- hints and synchronisation */

inline void flush(site s = site()) { pe_flush_at(s.at), detail::raise_pending(); }
inline void sync(site s = site()) { pe_sync_at(s.at), detail::raise_pending(); }
inline void hint_read(const array &a, site s = site()) { pe_hint_read_at(s.at, a.get()), detail::raise_pending(); }
/* pe_block_begin ... pe_block_end for the guard's life */
class block {
public:
    explicit block(site s = site()) : end_(s) { pe_block_begin_at(s.at), detail::raise_pending(); }
    ~block() { pe_block_end_at(end_.at); }
    block(const block &) = delete;
    block &operator=(const block &) = delete;

private:
    site end_;
};

/* --------------------------------------------------------------- session */

/* pe_init and the handler that turns errors into exceptions; pe_shutdown
 * when it ends (arrays still held are released by the shutdown first). */
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
