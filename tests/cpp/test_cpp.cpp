// test_cpp.cpp — the C++ binding (include/pe.hpp) against the C API in the
// same process and against plain loops: Black-Scholes bitwise equal to
// pe.h's, operators and scalars, reductions along an axis, views, copies and
// moves (no array leaked: pe_stats.live_arrays back where it started),
// errors as pe::error naming this file and the line of the call.
// tests/cpp/run.sh builds it with g++ and clang++ (-Wall -Wextra -Werror,
// ASan + UBSan) and runs it.
#include <pe.hpp>

#include <cmath>
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

int main()
{
    try {
        pe::session session;
        black_scholes_equals_c();
        operators_and_reductions();
        copies_and_moves();
        composed_and_helpers();
        errors_are_exceptions();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "unexpected exception: %s\n", e.what());
        return 1;
    }
    if (failures) std::fprintf(stderr, "%d checks failed\n", failures);
    else std::printf("pe.hpp: every check passed\n");
    return failures ? 1 : 0;
}
