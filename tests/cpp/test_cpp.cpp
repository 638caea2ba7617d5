// test_cpp.cpp — the C++ binding (include/pe.hpp) against the C API in the
// same process and against plain loops: Black-Scholes bitwise equal to
// pe.h's, operators and scalars, reductions along an axis, views, copies and
// moves (no array leaked: pe_stats.live_arrays back where it started),
// errors as pe::error naming this file and the line of the call; each
// family pe.h adds beyond the op catalog (matmul and LU, fft and conv,
// sparse, random numbers, complex, views, the order ops, reads, code reuse
// sections) against loops written here or, for random draws, the C API's
// own draws; and arrays, generators and matrices that outlive their session.
// tests/cpp/run.sh builds it with g++ and clang++ (-Wall -Wextra -Werror,
// ASan + UBSan) and runs it.
#include <pe.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static int failures = 0;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);           \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int64_t live()
{
    pe_stats s;
    pe_get_stats(&s);
    return s.live_arrays;
}

// Black-Scholes in C++ (examples/blackscholes.cpp, its main renamed) and
// in C (examples/blackscholes.c through prices_c.c)
#define main blackscholes_cpp_main
#include "../../examples/blackscholes.cpp"
#undef main
extern "C" int blackscholes_prices(int64_t n, const float *S, const float *X, const float *T, float r, float v, float *call,
                                   float *put);

static void black_scholes_equals_c()
{
    const int n = 100003;
    std::vector<float> S(n), X(n), T(n), c1, p1, c2, p2;
    std::srand(42);
    for (int i = 0; i < n; i++) {
        S[i] = 5.0f + 25.0f * static_cast<float>(std::rand()) / static_cast<float>(RAND_MAX);
        X[i] = 1.0f + 99.0f * static_cast<float>(std::rand()) / static_cast<float>(RAND_MAX);
        T[i] = 0.25f + 9.75f * static_cast<float>(std::rand()) / static_cast<float>(RAND_MAX);
    }
    int64_t before = live();
    blackscholes_prices_cpp(S, X, T, 0.02f, 0.30f, c1, p1);
    CHECK(live() == before); // every temporary released by its destructor
    c2.resize(n), p2.resize(n);
    CHECK(blackscholes_prices(n, S.data(), X.data(), T.data(), 0.02f, 0.30f, c2.data(), p2.data()) == PE_OK);
    CHECK(c1.size() == static_cast<size_t>(n) && c2.size() == static_cast<size_t>(n));
    CHECK(std::memcmp(c1.data(), c2.data(), n * sizeof(float)) == 0);
    CHECK(std::memcmp(p1.data(), p2.data(), n * sizeof(float)) == 0);
}

static void operators_and_reductions()
{
    const int64_t rows = 7, cols = 13;
    std::vector<float> a(rows * cols);
    for (int64_t k = 0; k < rows * cols; k++) a[k] = static_cast<float>(k % 11) - 4.5f;
    pe::array m = pe::from_host(a.data(), {rows, cols});
    std::vector<float> y = ((m * 2 + 1.5) % 3.0f - m / 4).to_vector<float>();
    for (int64_t k = 0; k < rows * cols; k++) CHECK(y[k] == std::fmod(a[k] * 2.0f + 1.5f, 3.0f) - a[k] / 4.0f);
    std::vector<unsigned char> big = ((m > 0.0f) & (m < 3)).to_vector<unsigned char>();
    for (int64_t k = 0; k < rows * cols; k++) CHECK(big[k] == (a[k] > 0.0f && a[k] < 3.0f));
    std::vector<float> rs = pe::sum(m, 1).to_vector<float>();
    for (int64_t r = 0; r < rows; r++) {
        double want = 0;
        for (int64_t c = 0; c < cols; c++) want += a[r * cols + c];
        CHECK(rs[r] == static_cast<float>(want));
    }
    std::vector<int32_t> am = pe::argmax(m, 0).to_vector<int32_t>();
    for (int64_t c = 0; c < cols; c++) {
        int64_t best = 0;
        for (int64_t r = 1; r < rows; r++) best = a[r * cols + c] > a[best * cols + c] ? r : best;
        CHECK(am[c] == best);
    }
    CHECK(pe::max_reduce(m).item() == 5.5);
    CHECK(pe::dot(m, m).item() > 0);
    std::vector<float> t = pe::transpose(pe::slice(m, {1, 2}, {3, 4})).to_vector<float>();
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) CHECK(t[i * 3 + j] == a[(1 + j) * cols + 2 + i]);
    std::vector<unsigned char> l = pe::logical_not(pe::logical_xor(m > 0, pe::logical_not(m < 1))).to_vector<unsigned char>();
    for (int64_t k = 0; k < rows * cols; k++) CHECK(l[k] == !((a[k] > 0) != !(a[k] < 1)));
}

// the composed functions, shape helpers, generators, shape and print
static void composed_and_helpers()
{
    std::vector<double> x = pe::sigmoid(pe::arange(PE_F64, -2, 3)).to_vector<double>();
    for (int i = 0; i < 5; i++) CHECK(std::fabs(x[i] - 1.0 / (1.0 + std::exp(2.0 - i))) < 1e-15);
    pe::array m = pe::reshape(pe::linspace(PE_F64, 0, 5, 6), {2, 3});
    std::vector<double> sm = pe::softmax(m, 1).to_vector<double>();
    CHECK(std::fabs(sm[0] + sm[1] + sm[2] - 1.0) < 1e-15);
    CHECK(pe::logsumexp(m, 1).shape() == (std::vector<int64_t>{2}));
    CHECK(pe::expand_dims(m, 1).shape() == (std::vector<int64_t>{2, 1, 3}));
    std::vector<double> r = pe::roll(m, 1, 1).to_vector<double>();
    CHECK(r[0] == 2 && r[1] == 0 && r[3] == 5);
    std::vector<double> padded = pe::pad(pe::arange(PE_F64, 1, 3), 0, 1, 1, PE_PAD_REFLECT).to_vector<double>();
    CHECK(padded == (std::vector<double>{2, 1, 2, 1}));
    std::vector<double> upd = pe::slice_update(m, pe::fill(PE_F64, {1, 2}, -1), {1, 1}).to_vector<double>();
    CHECK(upd[3] == 3 && upd[4] == -1 && upd[5] == -1 && upd[2] == 2);
    char *text = nullptr;
    std::size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pe::arange(PE_I32, 0, 4).print(f);
    std::fclose(f);
    CHECK(std::strcmp(text, "[0 1 2 3]\n") == 0);
    std::free(text);
    std::vector<double> sums = pe::cumsum(pe::arange(PE_F64, 1, 5), 0).to_vector<double>();
    CHECK(sums == (std::vector<double>{1, 3, 6, 10}));
    pe::array v = pe::from_vector(std::vector<double>{3, 1, 2});
    CHECK(pe::sort(v).to_vector<double>() == (std::vector<double>{1, 2, 3}));
    CHECK(pe::argsort(v, 0, true).to_vector<int32_t>() == (std::vector<int32_t>{0, 2, 1}));
    CHECK(pe::histogram(v, 2, 1, 3).to_vector<int32_t>() == (std::vector<int32_t>{1, 2}));
    pe::array idx = pe::cast(v, PE_I32);
    CHECK(pe::bincount(idx, 4).to_vector<int32_t>() == (std::vector<int32_t>{0, 1, 1, 1}));
    CHECK(pe::bincount(idx, v, 4).to_vector<double>() == (std::vector<double>{0, 1, 2, 3}));
    CHECK(pe::scatter_add(v, idx - 1, 1.0).to_vector<double>() == (std::vector<double>{4, 2, 3}));
}

static void copies_and_moves()
{
    int64_t before = live();
    {
        std::vector<double> d = {1, 2, 3};
        pe::array a = pe::from_vector(d), b = a, c;
        CHECK(live() == before + 1); // one array, two references
        c = std::move(b);
        CHECK(!b && c && c.valid());
        pe::array e = pe::exp(c) + a;
        CHECK(e.dtype() == PE_F64 && e.rank() == 1 && e.dim(0) == 3 && e.numel() == 3);
        std::vector<double> got = e.to_vector<double>();
        for (int i = 0; i < 3; i++) CHECK(got[i] == std::exp(d[i]) + d[i]);
        pe::array owned(e.release());
        CHECK(!e && owned);
#ifdef __cpp_lib_span
        std::vector<double> out(3);
        pe::from_span(std::span<const double>(d)).read(std::span<double>(out)); // C++20: spans in and out
        CHECK(out == d);
#endif
    }
    CHECK(live() == before);
}

static void errors_are_exceptions()
{
    pe::array a = pe::fill(PE_F32, {3, 4}, 1.0), b = pe::fill(PE_F32, {5}, 2.0);
    int line = 0;
    try {
        line = __LINE__ + 1;
        pe::array c = a + b; // shapes do not broadcast
        CHECK(!"no exception");
    } catch (const pe::error &e) {
        CHECK(e.code() == PE_E_SHAPE);
        CHECK(e.line() == line);
        CHECK(e.file().find("test_cpp.cpp") != std::string::npos);
        CHECK(std::strstr(e.what(), "test_cpp.cpp") != nullptr);
    }
    try {
        line = __LINE__ + 1;
        pe::array g = pe::gather(a, pe::from_vector(std::vector<int32_t>{0, 12}));
        g.to_vector<float>(); // index 12 of 12 elements: found when computed
        CHECK(!"no exception");
    } catch (const pe::error &e) {
        CHECK(e.code() == PE_E_ARG);
        CHECK(std::strstr(e.what(), "out of range") != nullptr);
    }
    std::vector<float> wrong(5);
    try {
        a.read(wrong.data(), wrong.size()); // 12 elements, not 5
        CHECK(!"no exception");
    } catch (const pe::error &e) {
        CHECK(e.code() == PE_E_ARG);
    }
}

// relative closeness for values computed in another order than the loop's
static bool near(double got, double want, double tol) { return std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want)); }
static bool near(std::complex<double> got, std::complex<double> want, double tol)
{
    return std::abs(got - want) <= tol * std::fmax(1.0, std::abs(want));
}
// deterministic test data in [-1, 1)
static std::vector<double> wave(int n, double phase)
{
    std::vector<double> v(n);
    for (int i = 0; i < n; i++) v[i] = std::sin(1.7 * i + phase) * std::cos(0.3 * i);
    return v;
}

// pe::grad and pe::jvp of sum(sin(x) * w . x) against the closed form
static void derivatives()
{
    std::vector<double> xs = wave(5, 0.3), ws = wave(5, 1.7);
    pe::array x = pe::grad_enable(pe::from_vector(xs)), w = pe::grad_enable(pe::from_vector(ws));
    pe::array y = pe::sum(pe::sin(x) * w);
    std::vector<pe::array> g = pe::grad(y, {x, w});
    std::vector<double> gx = g[0].to_vector<double>(), gw = g[1].to_vector<double>();
    std::vector<double> ones(5, 1.0);
    double along = pe::jvp(y, {x}, {pe::from_vector(ones)}).to_vector<double>()[0], want_along = 0;
    for (int i = 0; i < 5; i++) {
        CHECK(near(gx[i], std::cos(xs[i]) * ws[i], 1e-15));
        CHECK(near(gw[i], std::sin(xs[i]), 1e-15));
        want_along += std::cos(xs[i]) * ws[i];
    }
    CHECK(near(along, want_along, 1e-14));
    bool threw = false;
    try {
        pe::grad(y, {pe::from_vector(xs)}); // not a variable
    } catch (const pe::error &e) {
        threw = e.code() == PE_E_ARG;
    }
    CHECK(threw);
}

static void matmul_and_lu()
{
    const int m = 5, k = 4, n = 3;
    std::vector<double> a = wave(m * k, 0.1), b = wave(k * n, 0.7), x = wave(k, 2.0);
    std::vector<double> c = pe::matmul(pe::from_host(a.data(), {m, k}), pe::from_host(b.data(), {k, n})).to_vector<double>();
    std::vector<double> y = pe::matmul(pe::from_host(a.data(), {m, k}), pe::from_vector(x)).to_vector<double>();
    CHECK(c.size() == static_cast<size_t>(m * n) && y.size() == static_cast<size_t>(m));
    for (int i = 0; i < m; i++) {
        double yi = 0;
        for (int p = 0; p < k; p++) yi += a[i * k + p] * x[p];
        CHECK(near(y[i], yi, 1e-14));
        for (int j = 0; j < n; j++) {
            double cij = 0;
            for (int p = 0; p < k; p++) cij += a[i * k + p] * b[p * n + j];
            CHECK(near(c[i * n + j], cij, 1e-14));
        }
    }

    // a square system, diagonally dominant but with the pivot on another row
    // in the first column, so the factorisation swaps rows
    const int N = 6;
    std::vector<double> A = wave(N * N, 0.4), rhs = wave(N, 1.1);
    for (int i = 0; i < N; i++) A[i * N + i] += 4.0;
    A[3 * N + 0] = 9.0;
    pe::array am = pe::from_host(A.data(), {N, N});
    pe::lu_factors f = pe::lu(am);
    std::vector<double> sol = pe::lu_solve(f, pe::from_vector(rhs)).to_vector<double>();
    for (int i = 0; i < N; i++) {
        double r = 0;
        for (int j = 0; j < N; j++) r += A[i * N + j] * sol[j];
        CHECK(near(r, rhs[i], 1e-12)); // a x = b, checked by multiplying back
    }
    std::vector<int32_t> piv = f.pivots.to_vector<int32_t>();
    CHECK(piv.size() == static_cast<size_t>(N) && piv[0] == 3); // the largest entry of column 0
    pe::lu_parts parts = pe::lu_unpack(f);
    std::vector<double> P = parts.p.to_vector<double>(), L = parts.l.to_vector<double>(), U = parts.u.to_vector<double>();
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double pa = 0, lu = 0;
            for (int q = 0; q < N; q++) pa += P[i * N + q] * A[q * N + j], lu += L[i * N + q] * U[q * N + j];
            CHECK(near(pa, lu, 1e-12));
            if (j > i) CHECK(L[i * N + j] == 0 && U[j * N + i] == 0);
            if (j == i) CHECK(L[i * N + j] == 1);
        }
    // the condition number against ||A||_1 ||A^-1||_1 from a Gauss-Jordan inverse here
    std::vector<double> g = A, inv(N * N, 0.0);
    for (int i = 0; i < N; i++) inv[i * N + i] = 1;
    for (int col = 0; col < N; col++) {
        int best = col;
        for (int r = col + 1; r < N; r++) best = std::fabs(g[r * N + col]) > std::fabs(g[best * N + col]) ? r : best;
        for (int j = 0; j < N; j++) std::swap(g[col * N + j], g[best * N + j]), std::swap(inv[col * N + j], inv[best * N + j]);
        double d = g[col * N + col];
        for (int j = 0; j < N; j++) g[col * N + j] /= d, inv[col * N + j] /= d;
        for (int r = 0; r < N; r++) {
            if (r == col) continue;
            double fct = g[r * N + col];
            for (int j = 0; j < N; j++) g[r * N + j] -= fct * g[col * N + j], inv[r * N + j] -= fct * inv[col * N + j];
        }
    }
    double na = 0, ni = 0;
    for (int j = 0; j < N; j++) {
        double sa = 0, si = 0;
        for (int i = 0; i < N; i++) sa += std::fabs(A[i * N + j]), si += std::fabs(inv[i * N + j]);
        na = std::fmax(na, sa), ni = std::fmax(ni, si);
    }
    double cond = pe::lu_cond(f).item();
    CHECK(cond <= na * ni * (1 + 1e-12) && cond >= na * ni / 3); // gecon: a lower estimate within 3
}

static void fft_and_conv()
{
    const int n = 24;
    std::vector<double> x = wave(n, 0.3);
    pe::array xa = pe::from_vector(x);
    pe::array spectrum = pe::fft(xa);
    CHECK(spectrum.dtype() == PE_C128);
    std::vector<std::complex<double>> X = spectrum.to_vector<std::complex<double>>();
    const double two_pi = 6.283185307179586476925286766559;
    for (int k = 0; k < n; k++) {
        std::complex<double> want = 0;
        for (int j = 0; j < n; j++) want += x[j] * std::polar(1.0, -two_pi * j * k / n);
        CHECK(near(X[k], want, 1e-12)); // the DFT summed here
    }
    std::vector<std::complex<double>> back = pe::ifft(spectrum).to_vector<std::complex<double>>();
    for (int j = 0; j < n; j++) CHECK(near(back[j], x[j], 1e-14)); // ifft(fft(x)) is x
    // two axes: a 4 x 6 plane
    std::vector<std::complex<double>> X2 = pe::fft(pe::reshape(xa, {4, 6}), 2).to_vector<std::complex<double>>();
    for (int u = 0; u < 4; u++)
        for (int v = 0; v < 6; v++) {
            std::complex<double> want = 0;
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 6; c++) want += x[r * 6 + c] * std::polar(1.0, -two_pi * (r * u / 4.0 + c * v / 6.0));
            CHECK(near(X2[u * 6 + v], want, 1e-12));
        }

    // scipy's 'same' convolution and correlation, as pe.h writes them out
    std::vector<double> ker = {0.5, -1.0, 2.0, 0.25, 1.5};
    const int kn = static_cast<int>(ker.size());
    pe::array ka = pe::from_vector(ker);
    std::vector<double> cv = pe::conv(xa, ka).to_vector<double>(), cr = pe::correlate(xa, ka).to_vector<double>();
    CHECK(cv.size() == static_cast<size_t>(n) && cr.size() == static_cast<size_t>(n));
    for (int i = 0; i < n; i++) {
        double want_cv = 0, want_cr = 0;
        for (int j = 0; j < kn; j++) {
            int a = i + (kn - 1) / 2 - j, b = i + j - kn / 2;
            if (a >= 0 && a < n) want_cv += x[a] * ker[j];
            if (b >= 0 && b < n) want_cr += x[b] * ker[j];
        }
        CHECK(near(cv[i], want_cv, 1e-14));
        CHECK(near(cr[i], want_cr, 1e-14));
    }
}

static void sparse()
{
    // 4 x 5, one empty row:  [1 0 2 0 0; 0 0 0 0 0; 0 3 0 0 4; 5 0 0 6 7]
    std::vector<int32_t> row_ptr = {0, 2, 2, 4, 7}, col = {0, 2, 1, 4, 0, 3, 4};
    std::vector<double> val = {1, 2, 3, 4, 5, 6, 7}, x = {0.5, -1, 2, 0.25, 3};
    pe::csr m(pe::from_vector(row_ptr), pe::from_vector(col), pe::from_vector(val), 5); // the matrix holds its own references
    std::vector<double> y = pe::spmv(m, pe::from_vector(x)).to_vector<double>();
    CHECK(y.size() == 4);
    for (int r = 0; r < 4; r++) {
        double want = 0;
        for (int e = row_ptr[r]; e < row_ptr[r + 1]; e++) want += val[e] * x[col[e]];
        CHECK(y[r] == want); // each row summed in column order, as here
    }
    pe::csr moved = std::move(m);
    CHECK(!m.get().h && moved.get().h);
    CHECK(pe::spmv(moved, pe::from_vector(x) * 2).to_vector<double>()[3] == 2 * (5 * 0.5 + 6 * 0.25 + 7 * 3));
}

static void random_numbers()
{
    // the same seed through the C API: the same bits, draw after draw
    const uint64_t seed = 0x1234567890abcdefull;
    pe::rng r(seed);
    pe_rng c = pe_rng_create_at(nullptr, PE_RNG_PHILOX, seed);
    const int n = 4096;
    for (int draw = 0; draw < 2; draw++) {
        std::vector<double> mine = r.uniform(PE_F64, {n}).to_vector<double>(), theirs(n);
        CHECK(pe_read_release_at(nullptr, pe_rng_uniform_at(nullptr, c, PE_F64, 1, std::vector<int64_t>{n}.data()), theirs.data(),
                                 n * sizeof(double)) == PE_OK);
        CHECK(mine == theirs);
    }
    std::vector<float> nm = r.normal(PE_F32, {64, 64}).to_vector<float>(), nc(n);
    int64_t shape[2] = {64, 64};
    CHECK(pe_read_release_at(nullptr, pe_rng_normal_at(nullptr, c, PE_F32, 2, shape), nc.data(), n * sizeof(float)) == PE_OK);
    CHECK(std::memcmp(nm.data(), nc.data(), n * sizeof(float)) == 0);
    pe_rng_destroy_at(nullptr, c);

    // and what the draws are: uniform in [0, 1) with mean 1/2 and variance
    // 1/12, normal with mean 0 and variance 1 (bounds of 5 standard errors)
    pe::rng fast(7, PE_RNG_FAST);
    const int big = 1 << 18;
    std::vector<double> u = fast.uniform(PE_F64, {big}).to_vector<double>();
    std::vector<double> z = fast.normal(PE_F64, {big}).to_vector<double>();
    double su = 0, su2 = 0, sz = 0, sz2 = 0;
    bool in_range = true;
    for (int i = 0; i < big; i++) {
        in_range = in_range && u[i] >= 0 && u[i] < 1;
        su += u[i], su2 += u[i] * u[i], sz += z[i], sz2 += z[i] * z[i];
    }
    CHECK(in_range);
    double mu = su / big, vu = su2 / big - mu * mu, mz = sz / big, vz = sz2 / big - mz * mz;
    CHECK(std::fabs(mu - 0.5) < 5 * std::sqrt(1.0 / 12 / big));
    CHECK(std::fabs(vu - 1.0 / 12) < 5 * std::sqrt(1.0 / 180 / big)); // Var of u^2-ish: 1/180
    CHECK(std::fabs(mz) < 5 / std::sqrt(static_cast<double>(big)));
    CHECK(std::fabs(vz - 1) < 5 * std::sqrt(2.0 / big));
    std::vector<int32_t> w = fast.uniform(PE_I32, {8}).to_vector<int32_t>();
    CHECK(w.size() == 8 && !(w[0] == w[1] && w[1] == w[2]));
}

static void complex_numbers()
{
    const int n = 9;
    std::vector<std::complex<double>> z(n);
    for (int i = 0; i < n; i++) z[i] = {std::cos(0.7 * i) * (i + 1), std::sin(1.3 * i) - 0.5};
    pe::array a = pe::from_vector(z);
    CHECK(a.dtype() == PE_C128);
    const std::complex<double> w(0.5, -2.0);
    std::vector<std::complex<double>> got = (pe::conj(a) * w + pe::exp(a) / (a + 1.0)).to_vector<std::complex<double>>();
    std::vector<double> mag = pe::abs(a).to_vector<double>(), ang = pe::arg(a).to_vector<double>();
    std::vector<double> re = pe::real(a).to_vector<double>(), im = pe::imag(a).to_vector<double>();
    for (int i = 0; i < n; i++) {
        CHECK(near(got[i], std::conj(z[i]) * w + std::exp(z[i]) / (z[i] + 1.0), 1e-14));
        CHECK(near(mag[i], std::abs(z[i]), 1e-15) && near(ang[i], std::arg(z[i]), 1e-15));
        CHECK(re[i] == z[i].real() && im[i] == z[i].imag());
    }
    std::complex<double> total = 0;
    for (int i = 0; i < n; i++) total += z[i];
    CHECK(near(pe::sum(a).to_vector<std::complex<double>>()[0], total, 1e-15));
    // pe::complex from parts; complex scalars are weak as C's: a c64 array
    // times a std::complex<double> stays c64
    pe::array c64 = pe::complex(pe::cast(pe::real(a), PE_F32), 2.0f); // f32 parts: c64
    CHECK(pe::complex(pe::real(a), pe::imag(a)).dtype() == PE_C128);
    CHECK(pe::cast(a, PE_C64).dtype() == PE_C64 && (pe::cast(a, PE_C64) * w).dtype() == PE_C64);
    std::vector<std::complex<float>> cf = (std::complex<float>(0, 1) * pe::cast(a, PE_C64)).to_vector<std::complex<float>>();
    for (int i = 0; i < n; i++) CHECK(near(cf[i], std::complex<double>(-z[i].imag(), z[i].real()), 1e-6));
    CHECK(pe::scalar(PE_C128, std::complex<double>(1, 2)).to_vector<std::complex<double>>()[0] == std::complex<double>(1, 2));
    std::vector<std::complex<float>> filled = pe::fill(PE_C64, {2, 2}, std::complex<double>(-1, 0.5)).to_vector<std::complex<float>>();
    CHECK(filled.size() == 4 && filled[3] == std::complex<float>(-1, 0.5f));
    CHECK(c64.dtype() == PE_C64);
    // a complex product through the intrinsics: matmul of c128 against the loop
    std::vector<std::complex<double>> prod = pe::matmul(pe::reshape(a, {3, 3}), pe::reshape(a, {3, 3})).to_vector<std::complex<double>>();
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            std::complex<double> want = 0;
            for (int q = 0; q < 3; q++) want += z[i * 3 + q] * z[q * 3 + j];
            CHECK(near(prod[i * 3 + j], want, 1e-14));
        }
}

static void views_and_order()
{
    const int R = 4, C = 6;
    std::vector<double> a(R * C);
    for (int i = 0; i < R * C; i++) a[i] = i * 1.5 - 7;
    pe::array m = pe::from_host(a.data(), {R, C});
    // every other column from 1, the rows backwards from the last
    std::vector<double> st = pe::slice_step(m, {3, 1}, {4, 3}, {-1, 2}).to_vector<double>();
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) CHECK(st[i * 3 + j] == a[(3 - i) * C + 1 + 2 * j]);
    pe::array cube = pe::reshape(m, {2, 3, 4});
    std::vector<double> pm = pe::permute(cube, {2, 0, 1}).to_vector<double>(); // [4][2][3]
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) CHECK(pm[(i * 2 + j) * 3 + k] == a[(j * 3 + k) * 4 + i]);
    std::vector<double> per = pe::periodic(pe::slice(m, {0, 0}, {1, 4}), {3, 10}).to_vector<double>();
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 10; j++) CHECK(per[i * 10 + j] == a[j % 4]);
    std::vector<double> sp = pe::spread(pe::slice(m, {2, 0}, {1, C}), 0, 3).to_vector<double>();
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < C; j++) CHECK(sp[i * C + j] == a[2 * C + j]);
    std::vector<int32_t> idx = {23, 0, 7, 7};
    std::vector<double> g = pe::gather(m, pe::from_vector(idx)).to_vector<double>();
    for (int i = 0; i < 4; i++) CHECK(g[i] == a[idx[i]]);
    std::vector<double> cc = pe::concat(m, pe::slice(m, {0, 0}, {R, 2}), 1).to_vector<double>();
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C + 2; j++) CHECK(cc[i * (C + 2) + j] == a[i * C + (j < C ? j : j - C)]);

    // the order ops along the last axis of a 2-d array, against std::sort and a running product
    std::vector<double> w = wave(R * C, 0.9);
    pe::array wm = pe::from_host(w.data(), {R, C});
    std::vector<double> sorted = pe::sort(wm, 1, true).to_vector<double>();
    std::vector<int32_t> order = pe::argsort(wm, 1).to_vector<int32_t>();
    std::vector<double> cp = pe::cumprod(wm, 1).to_vector<double>();
    for (int i = 0; i < R; i++) {
        std::vector<double> row(w.begin() + i * C, w.begin() + (i + 1) * C), down = row;
        std::sort(down.begin(), down.end(), [](double x, double y) { return x > y; });
        double run = 1;
        for (int j = 0; j < C; j++) {
            CHECK(sorted[i * C + j] == down[j]);
            CHECK(row[order[i * C + j]] == down[C - 1 - j]); // no ties in the data: argsort is the order
            run *= row[j];
            CHECK(cp[i * C + j] == run);
        }
    }
}

// reads and host views: read_release, mapping, peek, reference, adopt, item<float>
static void reads_and_runtime()
{
    std::vector<double> d = wave(10, 0.2);
    pe::array a = pe::from_vector(d);
    pe::array e = pe::exp(a) * 3;
    std::vector<double> peeked(10), want(10);
    e.peek(peeked.data(), peeked.size());
    for (int i = 0; i < 10; i++) want[i] = std::exp(d[i]) * 3;
    for (int i = 0; i < 10; i++) CHECK(near(peeked[i], want[i], 1e-15));
    std::vector<double> ref = pe::reference(e).to_vector<double>();
    for (int i = 0; i < 10; i++) CHECK(near(ref[i], want[i], 1e-15));
    {
        pe::mapping<double> view = pe::map<double>(e);
        CHECK(view.size() == 10);
        int i = 0;
        for (double v : view) CHECK(near(v, want[i++], 1e-15));
    }
    std::vector<double> out = e.release_to_vector<double>();
    CHECK(!e && out.size() == 10 && near(out[9], want[9], 1e-15));
    std::vector<float> buf(1000, 2.5f);
    float *data = buf.data();
    pe::array adopted = pe::adopt(std::move(buf), {10, 100});
    CHECK(buf.empty() && adopted.shape() == (std::vector<int64_t>{10, 100}));
    CHECK(pe::sum(adopted).item<float>() == 2500.0f);
    CHECK(pe::map<float>(adopted).data() == data); // adopted, not copied
    CHECK(pe::stats().live_arrays == live());
    CHECK(pe::device_count() >= 1 && pe::device_info(0).kind == PE_DEVICE_CPU);
    CHECK(std::strcmp(pe::version(), PE_VERSION_STRING) == 0);
    CHECK(std::strcmp(pe::status_name(PE_E_SHAPE), pe_status_name(PE_E_SHAPE)) == 0);
    try {
        pe::device_info(pe::device_count());
        CHECK(!"no exception");
    } catch (const pe::error &err) {
        CHECK(err.code() == PE_E_DEVICE);
    }
}

// pe::macro: one recording, replays after it, the values of the loop written
// here; an input given back as an output; a host read in the body throws
// PE_E_MACRO, a failed op its own error, and neither leaks an array
static void code_reuse_sections()
{
    const int n = 64;
    std::vector<double> a0 = wave(n, 0.5), b0 = wave(n, 1.5), want = a0;
    int64_t before_live = live();
    {
        pe::array acc = pe::from_vector(a0), y = pe::from_vector(b0);
        pe_stats before = pe::stats();
        double scale = 0.5;
        int body_runs = 0;
        for (int it = 0; it < 5; it++) {
            std::vector<pe::array> out = pe::macro(
                "step", {acc, y}, 2,
                [&](const std::vector<pe::array> &in) {
                    body_runs++;
                    pe::array dropped = in[0] + 1; // made and released inside the body
                    return std::vector<pe::array>{in[0] * scale + pe::sin(in[1]) + (dropped - dropped), in[1]};
                },
                &scale, sizeof scale);
            acc = out[0], y = out[1];
            for (int i = 0; i < n; i++) want[i] = want[i] * scale + std::sin(b0[i]);
        }
        pe_stats after = pe::stats();
        CHECK(body_runs == 1 && after.macro_records - before.macro_records == 1 && after.macro_hits - before.macro_hits == 4);
        std::vector<double> got = acc.to_vector<double>();
        for (int i = 0; i < n; i++) CHECK(near(got[i], want[i], 1e-14));
        CHECK(y.to_vector<double>() == b0);
        // one output, returned as an array
        pe::array doubled = pe::macro("twice", {acc}, 1, [](const std::vector<pe::array> &in) { return in[0] * 2; })[0];
        CHECK(near(doubled.to_vector<double>()[7], 2 * want[7], 1e-14));
        try {
            pe::macro("reads", {acc}, 1, [](const std::vector<pe::array> &in) {
                in[0].to_vector<double>(); // host data inside a body
                return in[0];
            });
            CHECK(!"no exception");
        } catch (const pe::error &err) {
            CHECK(err.code() == PE_E_MACRO);
        }
        try { // an error inside the body leaves it by an exception: the section ends, uncached
            pe::macro("fails", {acc}, 1, [](const std::vector<pe::array> &in) { return in[0] + pe::fill(PE_F64, {3}, 1.0); });
            CHECK(!"no exception");
        } catch (const pe::error &err) {
            CHECK(err.code() == PE_E_SHAPE);
        }
        CHECK(pe::sum(pe::macro("after", {acc}, 1, [](const std::vector<pe::array> &in) { return -in[0]; })[0] + acc).item() == 0);
    }
    CHECK(live() == before_live);
}

// Objects that outlive their session: the shutdown freed what they held, so
// their destructors do nothing (no "PE is not initialised" abort: run.sh
// fails on any message on stderr), and a later session never sees their
// handles.  Run with no other session open (a session's end shuts PE down).
static pe::array global_survivor; // destroyed after main returns
static void outlive_session()
{
    pe::array survivor;
    pe::rng gen; // none yet: assigned in the session
    std::unique_ptr<pe::csr> matrix;
    std::unique_ptr<pe::mapping<double>> view;
    std::unique_ptr<pe::block> open_block;
    {
        pe::session s;
        survivor = pe::fill(PE_F64, {100}, 1.5);
        global_survivor = survivor + 1;
        gen = pe::rng(3);
        matrix.reset(new pe::csr(pe::from_vector(std::vector<int32_t>{0, 1}), pe::from_vector(std::vector<int32_t>{0}),
                                 pe::from_vector(std::vector<double>{2}), 1));
        view.reset(new pe::mapping<double>(global_survivor));
        CHECK(pe::sum(survivor).item() == 150 && survivor.valid() && (*view)[99] == 2.5);
        open_block.reset(new pe::block()); // still open at the shutdown
    }
    CHECK(!survivor && !survivor.valid() && survivor.get().h == 0 && !gen.get().h && !matrix->get().h);
    pe::array copy = survivor; // a copy of a dead array is empty, no retain
    CHECK(!copy);
    {
        pe::session again; // a new runtime: the old handles are never passed to it
        pe::array fresh = pe::fill(PE_F64, {3}, 2.0);
        try {
            pe::array bad = survivor + 1;
            CHECK(!"no exception");
        } catch (const pe::error &err) {
            CHECK(err.code() == PE_E_HANDLE); // a null handle, not whatever array holds the slot now
        }
        CHECK(fresh.to_vector<double>() == (std::vector<double>{2, 2, 2}));
    }
    // survivor, gen, matrix, view and open_block end here, global_survivor at exit: nothing to do
}

int main()
{
    try {
        pe::session session;
        black_scholes_equals_c();
        operators_and_reductions();
        copies_and_moves();
        composed_and_helpers();
        errors_are_exceptions();
        matmul_and_lu();
        derivatives();
        fft_and_conv();
        sparse();
        random_numbers();
        complex_numbers();
        views_and_order();
        reads_and_runtime();
        code_reuse_sections();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "unexpected exception: %s\n", e.what());
        return 1;
    }
    try {
        outlive_session();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "unexpected exception: %s\n", e.what());
        return 1;
    }
    if (failures) std::fprintf(stderr, "%d checks failed\n", failures);
    else std::printf("pe.hpp: every check passed\n");
    return failures ? 1 : 0;
}
