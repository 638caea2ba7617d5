// blackscholes.cpp — examples/blackscholes.c in C++ through include/pe.hpp:
// the same prices, bitwise (tests/cpp checks it), with no releases written
// (pe::array's destructor releases) and errors as pe::error exceptions.
//
//   blackscholes_cpp [N]     prices N options (default 100000), prints a few
//                            and the largest difference from plain C prices
#include <pe.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

// The prices of the options (spot S, strike X, years T; rate r, volatility v).
void blackscholes_prices_cpp(const std::vector<float> &S, const std::vector<float> &X, const std::vector<float> &T, float r,
                             float v, std::vector<float> &call, std::vector<float> &put)
{
    const int64_t n = static_cast<int64_t>(S.size());
    pe::array s = pe::from_host(S.data(), {n}), x = pe::from_host(X.data(), {n}), t = pe::from_host(T.data(), {n});
    pe::array sqrt_t = pe::sqrt(t);
    pe::array d1 = (pe::log(s / x) + (r + 0.5f * v * v) * t) / (v * sqrt_t);
    pe::array d2 = d1 - v * sqrt_t;
    pe::array discounted = x * pe::exp(-r * t);
    pe::array c = s * pe::cdf_norm(d1) - discounted * pe::cdf_norm(d2);
    pe::array p = discounted * pe::cdf_norm(-d2) - s * pe::cdf_norm(-d1);
    call = c.to_vector<float>();
    put = p.to_vector<float>();
}

static double cnd(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

int main(int argc, char **argv)
{
    long long n = argc > 1 ? std::atoll(argv[1]) : 100000;
    if (argc > 2 || n <= 0) {
        std::fprintf(stderr, "usage: %s [N > 0]\n", argv[0]);
        return 2;
    }
    std::vector<float> S(n), X(n), T(n), call, put;
    std::srand(42);
    for (long long i = 0; i < n; i++) {
        S[i] = 5.0f + 25.0f * static_cast<float>(std::rand()) / static_cast<float>(RAND_MAX);
        X[i] = 1.0f + 99.0f * static_cast<float>(std::rand()) / static_cast<float>(RAND_MAX);
        T[i] = 0.25f + 9.75f * static_cast<float>(std::rand()) / static_cast<float>(RAND_MAX);
    }
    const float r = 0.02f, v = 0.30f;
    try {
        pe::session session;
        blackscholes_prices_cpp(S, X, T, r, v, call, put);
    } catch (const pe::error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    double worst = 0;
    for (long long i = 0; i < n; i++) {
        double e1 = (std::log(static_cast<double>(S[i]) / X[i]) + (r + 0.5 * v * v) * T[i]) / (v * std::sqrt(static_cast<double>(T[i])));
        double e2 = e1 - v * std::sqrt(static_cast<double>(T[i]));
        double cc = S[i] * cnd(e1) - X[i] * std::exp(-r * static_cast<double>(T[i])) * cnd(e2);
        double pp = X[i] * std::exp(-r * static_cast<double>(T[i])) * cnd(-e2) - S[i] * cnd(-e1);
        worst = std::fmax(worst, std::fmax(std::fabs(call[i] - cc) / std::fmax(1.0, std::fabs(cc)),
                                           std::fabs(put[i] - pp) / std::fmax(1.0, std::fabs(pp))));
    }
    std::printf("Black-Scholes in C++, %lld options (PE %s)\n", n, pe_version());
    for (long long i = 0; i < n && i < 5; i++) std::printf("%8.3f %8.3f %8.3f %10.5f %10.5f\n", S[i], X[i], T[i], call[i], put[i]);
    std::printf("largest relative difference from plain C (double): %.3g -> %s\n", worst, worst < 1e-4 ? "OK" : "MISMATCH");
    return worst < 1e-4 ? 0 : 1;
}
