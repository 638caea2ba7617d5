// tests/consumer/main.cpp — the same first program through pe.hpp.
#include <pe.hpp>
#include <cstdio>

int main() {
    pe::session session;
    float x[3] = {1, 2, 3};
    pe::array a = pe::from_host(x, {3});
    double y = pe::sum(a * a).item();
    std::printf("%g\n", y);
    return y == 14.0 ? 0 : 1;
}
