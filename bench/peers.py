#!/usr/bin/python3
"""peers.py — the workloads of bench_cpu.c in NumPy and numexpr, timed the
same way (median of 7 after 2 warm-ups), for the comparison in RESULTS.md.
Usage: /usr/bin/python3 bench/peers.py [scale]"""
import statistics
import sys
import time

import numpy as np
import numexpr as ne

RUNS, WARMUP = 7, 2
scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def median_ms(f):
    for _ in range(WARMUP):
        f()
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


rng = np.random.default_rng(1)
n = int(10e6 * scale)
S = rng.uniform(5, 30, n).astype(np.float32)
X = rng.uniform(1, 100, n).astype(np.float32)
T = rng.uniform(0.25, 10, n).astype(np.float32)
r, v = np.float32(0.02), np.float32(0.30)


def bs_numexpr():
    # numexpr has no erf/erfc: the standard normal CDF by the Abramowitz-Stegun
    # 7.1.26 polynomial (max error 1.5e-7), the usual numexpr formulation.
    d1 = ne.evaluate("(log(S / X) + (r + 0.5 * v * v) * T) / (v * sqrt(T))")
    d2 = ne.evaluate("d1 - v * sqrt(T)")
    cnd = "(where(z >= 0, 1 - p, p))"
    p = "(0.3989422804 * exp(-0.5 * z * z) * k * (0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))))"
    k = "(1 / (1 + 0.2316419 * abs(z)))"
    expr = cnd.replace("p", p).replace("k", k)
    c1 = ne.evaluate(expr.replace("z", "d1"))
    c2 = ne.evaluate(expr.replace("z", "d2"))
    call = ne.evaluate("S * c1 - X * exp(-r * T) * c2")
    put = ne.evaluate("X * exp(-r * T) * (1 - c2) - S * (1 - c1)")
    return call, put


def bs_numpy():
    sqrt_t = np.sqrt(T)
    d1 = (np.log(S / X) + (r + np.float32(0.5) * v * v) * T) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    k1 = 1 / (1 + np.float32(0.2316419) * np.abs(d1))
    k2 = 1 / (1 + np.float32(0.2316419) * np.abs(d2))

    def cnd(z, k):
        poly = k * (0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
        p = np.float32(0.3989422804) * np.exp(np.float32(-0.5) * z * z) * poly.astype(np.float32)
        return np.where(z >= 0, 1 - p, p)

    c1, c2 = cnd(d1, k1), cnd(d2, k2)
    disc = X * np.exp(-r * T)
    return S * c1 - disc * c2, disc * (1 - c2) - S * (1 - c1)


print(f"NumPy {np.__version__}, numexpr {ne.__version__} ({ne.detect_number_of_cores()} cores)")
print(f"{'workload':34} {'NumPy':>10} {'numexpr':>10}")
print(f"{'Black-Scholes %dM options' % (n // 1000000):34} {median_ms(bs_numpy):8.2f}ms {median_ms(bs_numexpr):8.2f}ms")
del S, X, T

n = int(32e6 * scale)
b = rng.uniform(0.5, 2, n).astype(np.float32)
c = rng.uniform(0.5, 2, n).astype(np.float32)
s = np.float32(2.5)
print(f"{'triad %dM' % (n // 1000000):34} {median_ms(lambda: b + s * c):8.2f}ms {median_ms(lambda: ne.evaluate('b + s * c')):8.2f}ms")


def chain_np(x=b, y=c):
    t = x * np.float32(1.5) + y
    t = t - np.float32(0.25)
    t = t * t
    t = t + x
    t = np.sqrt(t + np.float32(1))
    t = t * np.float32(0.5) - y
    t = t / (x * x + np.float32(1))
    t = -t + np.float32(2)
    t = t * y + x
    t = t * np.float32(0.125)
    return t - np.float32(3)


chain_expr = "((-(((sqrt(((b * 1.5 + c - 0.25) ** 2 + b) + 1)) * 0.5 - c) / (b * b + 1)) + 2) * c + b) * 0.125 - 3"
print(f"{'16-op chain %dM' % (n // 1000000):34} {median_ms(chain_np):8.2f}ms {median_ms(lambda: ne.evaluate(chain_expr)):8.2f}ms")
del b, c

n = int(64e6 * scale)
x = rng.uniform(-1, 1, n).astype(np.float32)
y = rng.uniform(-1, 1, n).astype(np.float32)
print(f"{'sum %dM f32' % (n // 1000000):34} {median_ms(lambda: x.sum(dtype=np.float64)):8.2f}ms {median_ms(lambda: ne.evaluate('sum(x)')):8.2f}ms")
print(f"{'dot %dM f32' % (n // 1000000):34} {median_ms(lambda: np.dot(x, y)):8.2f}ms {median_ms(lambda: ne.evaluate('sum(x * y)')):8.2f}ms")
