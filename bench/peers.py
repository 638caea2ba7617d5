#!/usr/bin/python3
"""peers.py — workloads 1-4 of bench_cpu.c in NumPy and numexpr, timed the
same way (time.perf_counter, median of 7 runs after 2 warm-ups), for the
comparison in RESULTS.md.  Run by scripts/bench.

    /usr/bin/python3 bench/peers.py [scale]      scale 1 = 10M / 32M / 64M

Every computation is float32, as in bench_cpu.c: scalars are np.float32 (a
Python float constant inside a numexpr string would make numexpr compute in
float64), and the final result goes into a preallocated array (out=), as PE's
pe_read and the C loops write into preallocated buffers.  Neither library has
erf/erfc, so Black-Scholes uses the Abramowitz-Stegun 26.2.17 polynomial for
the normal CDF (absolute error < 7.5e-8), the usual formulation with them; the
CDF is evaluated four times, as in examples/blackscholes.c.

With BENCH_TSV=file in the environment, rows "workload<TAB>impl<TAB>value<TAB>ms"
are appended to it (scripts/bench builds its summary table from them)."""
import os
import statistics
import sys
import time

import numpy as np
import numexpr as ne

RUNS, WARMUP = 7, 2
scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
tsv = open(os.environ["BENCH_TSV"], "a") if os.environ.get("BENCH_TSV") else None
f32 = np.float32


def median_ms(f):
    for _ in range(WARMUP):
        f()
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def row(name, np_ms, ne_ms, check=""):
    print(f"{name:26} {np_ms:10.2f} {ne_ms:10.2f}  {check}")
    if tsv:
        tsv.write(f"{name}\tNumPy\t{np_ms:.6g}\tms\n{name}\tnumexpr\t{ne_ms:.6g}\tms\n")


def rel_diff(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


print(f"NumPy {np.__version__}, numexpr {ne.__version__} ({ne.nthreads} numexpr threads); "
      f"median of {RUNS} runs after {WARMUP} warm-ups")
print(f"{'workload (ms)':26} {'NumPy':>10} {'numexpr':>10}  check")
rng = np.random.default_rng(1)

# ---------------------------------------------------------------- 1. Black-Scholes
n = int(10e6 * scale)
S = rng.uniform(5, 30, n).astype(f32)
X = rng.uniform(1, 100, n).astype(f32)
T = rng.uniform(0.25, 10, n).astype(f32)
r, v = f32(0.02), f32(0.30)
drift, mr = f32(0.02 + 0.5 * 0.30 * 0.30), f32(-0.02)
A = [f32(c) for c in (0.2316419, 0.319381530, -0.356563782, 1.781477937, -1.821255978, 1.330274429, 0.3989422804)]
half, one = f32(0.5), f32(1.0)
call_np, put_np = np.empty(n, f32), np.empty(n, f32)
call_ne, put_ne = np.empty(n, f32), np.empty(n, f32)


def cnd_np(z):
    k = one / (one + A[0] * np.abs(z))
    poly = k * (A[1] + k * (A[2] + k * (A[3] + k * (A[4] + k * A[5]))))
    p = A[6] * np.exp(-half * z * z) * poly
    return np.where(z >= 0, one - p, p)


def bs_numpy():
    sqrt_t = np.sqrt(T)
    d1 = (np.log(S / X) + drift * T) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    disc = X * np.exp(mr * T)
    np.subtract(S * cnd_np(d1), disc * cnd_np(d2), out=call_np)
    np.subtract(disc * cnd_np(-d2), S * cnd_np(-d1), out=put_np)


CND = ("where(Z >= 0, 1 - P, P)"
       .replace("P", "(a6 * exp(-half * Z * Z) * K * (a1 + K * (a2 + K * (a3 + K * (a4 + K * a5)))))")
       .replace("K", "(1 / (1 + a0 * abs(Z)))"))
NE_VARS = {f"a{i}": c for i, c in enumerate(A)} | {"half": half, "v": v, "drift": drift, "mr": mr}


def bs_numexpr():
    env = dict(NE_VARS, S=S, X=X, T=T)
    env["d1"] = ne.evaluate("(log(S / X) + drift * T) / (v * sqrt(T))", local_dict=env)
    env["d2"] = ne.evaluate("d1 - v * sqrt(T)", local_dict=env)
    ne.evaluate(f"S * {CND.replace('Z', 'd1')} - X * exp(mr * T) * {CND.replace('Z', 'd2')}",
                local_dict=env, out=call_ne)
    ne.evaluate(f"X * exp(mr * T) * {CND.replace('Z', '(-d2)')} - S * {CND.replace('Z', '(-d1)')}",
                local_dict=env, out=put_ne)


t_np, t_ne = median_ms(bs_numpy), median_ms(bs_numexpr)
row(f"Black-Scholes {n / 1e6:g}M", t_np, t_ne,
    f"numexpr vs NumPy max rel diff {max(rel_diff(call_ne, call_np), rel_diff(put_ne, put_np)):.1e}")
del S, X, T, call_np, put_np, call_ne, put_ne

# ------------------------------------------------------- 2, 3. triad and the 16-op chain
n = int(32e6 * scale)
b = rng.uniform(0.5, 2, n).astype(f32)
c = rng.uniform(0.5, 2, n).astype(f32)
s = f32(2.5)
out_np, out_ne = np.empty(n, f32), np.empty(n, f32)
t_np = median_ms(lambda: np.add(b, s * c, out=out_np))
t_ne = median_ms(lambda: ne.evaluate("b + s * c", out=out_ne))
row(f"triad {n / 1e6:g}M", t_np, t_ne, f"max rel diff {rel_diff(out_ne, out_np):.1e}")

K = {k: f32(val) for k, val in dict(k1_5=1.5, k0_25=0.25, k1=1.0, k0_5=0.5, k2=2.0, k3=3.0).items()}


def chain_np(x=b, y=c):
    t = x * K["k1_5"]            # 1
    t = t + y                    # 2
    t = t - K["k0_25"]           # 3
    t = t * t                    # 4
    t = t + x                    # 5
    t = t + K["k1"]              # 6
    t = np.sqrt(t)               # 7
    t = t * K["k0_5"]            # 8
    t = t - y                    # 9
    u = x * x                    # 10
    u = u + K["k1"]              # 11
    t = t / u                    # 12
    t = -t                       # 13
    t = t + K["k2"]              # 14
    t = t * y                    # 15
    np.subtract(t, K["k3"], out=out_np)  # 16


CHAIN = "(-((sqrt((b * k1_5 + c - k0_25) ** 2 + b + k1) * k0_5 - c) / (b * b + k1)) + k2) * c - k3"
t_np = median_ms(chain_np)
t_ne = median_ms(lambda: ne.evaluate(CHAIN, local_dict=dict(K, b=b, c=c), out=out_ne))
row(f"16-op chain {n / 1e6:g}M", t_np, t_ne, f"max rel diff {rel_diff(out_ne, out_np):.1e}")
del b, c, out_np, out_ne

# ----------------------------------------------------------------- 4. sum and dot
n = int(64e6 * scale)
x = rng.uniform(-1, 1, n).astype(f32)
y = rng.uniform(-1, 1, n).astype(f32)
res = {}
t_np = median_ms(lambda: res.__setitem__("np", x.sum(dtype=np.float64)))
t_ne = median_ms(lambda: res.__setitem__("ne", ne.evaluate("sum(x)")))
row(f"sum {n / 1e6:g}M", t_np, t_ne, f"NumPy {res['np']:.6g} (f64) numexpr {float(res['ne']):.6g} (f32 sum)")
t_np = median_ms(lambda: res.__setitem__("np", np.dot(x, y)))
t_ne = median_ms(lambda: res.__setitem__("ne", ne.evaluate("sum(x * y)")))
row(f"dot {n / 1e6:g}M", t_np, t_ne, f"NumPy {float(res['np']):.6g} (f32 BLAS) numexpr {float(res['ne']):.6g}")
if tsv:
    tsv.close()
