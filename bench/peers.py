#!/usr/bin/python3
"""peers.py — workloads 1-4 of bench_cpu.c, the six of bench_views.c,
bench_rng.c's Monte Carlo pi (default_rng().random) and bench_gallery.c's
four gallery programs in NumPy and numexpr, timed the same way
(time.perf_counter, median of 7 runs after 2 warm-ups), for the comparison
in RESULTS.md.  Run by scripts/bench.

    /usr/bin/python3 bench/peers.py [scale] [gallery | intrinsics | ops]
        scale 1 = 10M / 32M / 64M, and bench_views.c's sizes; "gallery":
        only the gallery part (its sizes are bench_gallery.c's, unscaled);
        "intrinsics": bench_intrinsics.c's rows NumPy has (gemm, the fused
        epilogue, fft, fft2, a 16-tap convolution; n = 4096 * scale); "ops":
        bench_ops.c's rows (cumsum, stable sort and argsort, histogram,
        bincount, np.add.at, the consumers of roll, pad and a slice update;
        10^7 * scale float32 elements); "grad": bench_grad.c's rows in JAX
        and Dr.Jit where they are installed (grad_peers)

The gallery workloads are bench_gallery.c's, on the same inputs (its glibc
rand() sequences are drawn through ctypes) and in its precisions (float32,
sums as NumPy takes them), written as a NumPy user writes them: slices for
the stencil, broadcasting for all pairs, complex64 with a mask for
Mandelbrot, argmin(axis=) and bincount for k-means.  With
BENCH_GALLERY_RESULTS=dir (where bench_gallery wrote its C loops' results)
the check column compares against the C loop; without it, it prints a
summary value of NumPy's result.

bench_views.c's workloads have its names and sizes (a square side is
4096 sqrt(scale) rounded to a multiple of 64, the other arrays' rows and the
gather's length scale), written as a NumPy user writes them: slices, axis=,
keepdims=True, a.T, np.take.  numexpr takes the element-wise parts (its
strided inputs are views, not copies), its sum(..., axis=) the per-axis sums
(one thread, f32 accumulation); it has no gather.

Every computation is float32, as in bench_cpu.c: scalars are np.float32 (a
Python float constant inside a numexpr string would make numexpr compute in
float64), and the final result goes into a preallocated array (out=), as PE's
pe_read and the C loops write into preallocated buffers.  Neither library has
erf/erfc, so Black-Scholes uses the Abramowitz-Stegun 26.2.17 polynomial for
the normal CDF (absolute error < 7.5e-8), the usual formulation with them; the
CDF is evaluated four times, as in examples/blackscholes.c.

With BENCH_TSV=file in the environment, rows "workload<TAB>impl<TAB>value<TAB>ms"
are appended to it (scripts/bench builds its summary table from them)."""
import ctypes
import math
import os
import statistics
import sys
import time

import numpy as np

RUNS, WARMUP = 7, 2


def median_ms(f):
    for _ in range(WARMUP):
        f()
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def grad_peers(scale):
    """bench_grad.c's rows in JAX (jax.jit, float32 / float64 as there) and
    Dr.Jit (its LLVM backend, drjit.llvm.ad): Black-Scholes call prices of
    4M * scale options, and their gradient by S, X and T read back; a
    logistic regression step of 200000 x 32 float64 with the gradient
    hand-written and derived (jax.value_and_grad; Dr.Jit has no matrix
    product for it).  Each library is skipped where it is not installed."""
    r, v = np.float32(0.02), np.float32(0.30)
    n = int((4 << 20) * scale)
    gen = np.random.default_rng(1)
    s = gen.uniform(5, 30, n).astype(np.float32)
    x = gen.uniform(1, 100, n).astype(np.float32)
    t = gen.uniform(0.25, 10, n).astype(np.float32)
    print(f"Black-Scholes, {n} float32 options; median of {RUNS} runs after {WARMUP} warm-ups (ms)")
    try:
        import jax
        import jax.numpy as jnp
        from jax.scipy.special import ndtr

        def call(s, x, t):
            sqrt_t = jnp.sqrt(t)
            d1 = (jnp.log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt_t)
            return s * ndtr(d1) - x * jnp.exp(-r * t) * ndtr(d1 - v * sqrt_t)

        @jax.jit
        def prices_and_gradient(s, x, t):  # reverse mode of the sum of the prices, the prices with it
            prices, back = jax.vjp(call, s, x, t)
            return (prices,) + back(jnp.ones_like(prices))

        forward = jax.jit(call)
        js, jx, jt = (jax.device_put(a) for a in (s, x, t))
        f_ms = median_ms(lambda: np.asarray(forward(js, jx, jt)))
        g_ms = median_ms(lambda: [np.asarray(a) for a in prices_and_gradient(js, jx, jt)])
        print(f"  JAX {jax.__version__}: forward {f_ms:.2f}, gradient by S, X, T (and the prices) {g_ms:.2f}, "
              f"gradient / forward {g_ms / f_ms:.2f}x")
    except ImportError:
        print("  JAX: not installed")
    try:
        import drjit as dr
        from drjit.llvm.ad import Float

        def dr_call(s, x, t):
            rate, vol = float(r), float(v)  # Python floats: a NumPy scalar would turn Dr.Jit's arrays into NumPy's
            sqrt_t = dr.sqrt(t)
            d1 = (dr.log(s / x) + (rate + 0.5 * vol * vol) * t) / (vol * sqrt_t)
            d2 = d1 - vol * sqrt_t
            cdf = lambda d: 0.5 * (1 + dr.erf(d * 0.7071067811865476))
            return s * cdf(d1) - x * dr.exp(-rate * t) * cdf(d2)

        def dr_forward():
            c = dr_call(Float(s), Float(x), Float(t))
            return c.numpy()

        def dr_gradient():
            ds, dx, dt = Float(s), Float(x), Float(t)
            dr.enable_grad(ds, dx, dt)
            c = dr_call(ds, dx, dt)
            dr.backward(c)
            return c.numpy(), dr.grad(ds).numpy(), dr.grad(dx).numpy(), dr.grad(dt).numpy()

        f_ms, g_ms = median_ms(dr_forward), median_ms(dr_gradient)
        print(f"  Dr.Jit {dr.__version__} (LLVM): forward {f_ms:.2f}, gradient by S, X, T (and the prices) {g_ms:.2f}, "
              f"gradient / forward {g_ms / f_ms:.2f}x")
    except ImportError:
        print("  Dr.Jit: not installed")
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        rows, cols, rate = 200000, 32, 0.5
        xs = jnp.asarray(gen.uniform(-1, 1, (rows, cols)))
        ys = jnp.asarray((gen.uniform(0, 1, rows) < 0.5).astype(np.float64))

        def loss(w):
            z = xs @ w
            return jnp.mean(jnp.maximum(z, 0) + jnp.log1p(jnp.exp(-jnp.abs(z))) - ys * z)

        @jax.jit
        def by_hand(w):
            z = xs @ w
            return loss(w), w - rate * (xs.T @ (jax.nn.sigmoid(z) - ys)) / rows

        @jax.jit
        def derived(w):
            value, g = jax.value_and_grad(loss)(w)
            return value, w - rate * g

        def steps(step):
            w = jnp.zeros(cols)
            for _ in range(5):
                value, w = step(w)
                float(value)  # the loss read each step, as bench_grad's loop reads it
        h_ms, d_ms = median_ms(lambda: steps(by_hand)) / 5, median_ms(lambda: steps(derived)) / 5
        print(f"logistic regression step, {rows} x {cols} float64, JAX: hand-written gradient {h_ms:.3f}, "
              f"derived {d_ms:.3f}, {d_ms / h_ms:.2f}x")
    except ImportError:
        pass


if len(sys.argv) == 3 and sys.argv[2] == "grad":
    grad_peers(float(sys.argv[1]))
    sys.exit(0)

import numexpr as ne  # noqa: E402 (the grad rows need neither NumPy's peers nor numexpr)

if len(sys.argv) > 3 or (len(sys.argv) == 3 and sys.argv[2] not in ("gallery", "intrinsics", "ops")):
    sys.exit("usage: peers.py [scale] [gallery | intrinsics | ops | grad]")
scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
only_gallery = len(sys.argv) == 3 and sys.argv[2] == "gallery"
only_intrinsics = len(sys.argv) == 3 and sys.argv[2] == "intrinsics"
only_ops = len(sys.argv) == 3 and sys.argv[2] == "ops"
tsv = open(os.environ["BENCH_TSV"], "a") if os.environ.get("BENCH_TSV") else None
f32 = np.float32


def row(name, np_ms, ne_ms, check=""):
    """ne_ms None: numexpr has no such operation."""
    print(f"{name:26} {np_ms:10.2f} {'-' if ne_ms is None else f'{ne_ms:.2f}':>10}  {check}")
    if tsv:
        tsv.write(f"{name}\tNumPy\t{np_ms:.6g}\tms\n")
        if ne_ms is not None:
            tsv.write(f"{name}\tnumexpr\t{ne_ms:.6g}\tms\n")


def rel_diff(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


print(f"NumPy {np.__version__}, numexpr {ne.__version__} ({ne.nthreads} numexpr threads); "
      f"median of {RUNS} runs after {WARMUP} warm-ups")
print(f"{'workload (ms)':26} {'NumPy':>10} {'numexpr':>10}  check")


if only_intrinsics:  # bench_intrinsics.c's rows NumPy has (no LU, no CSR without SciPy): n = 4096 * scale
    n = max(64, int(4096 * scale))
    rng = np.random.default_rng(7)
    print(f"NumPy {np.__version__}; n = {n}")
    print(f"{'workload (ms)':26} {'NumPy':>10} {'numexpr':>10}")
    for dt, name in ((np.float32, "sgemm"), (np.float64, "dgemm")):
        A, B = rng.uniform(-1, 1, (n, n)).astype(dt), rng.uniform(-1, 1, (n, n)).astype(dt)
        row(f"{name} {n}", median_ms(lambda: A @ B), None)
    A, B, C = (rng.uniform(-1, 1, (n, n)).astype(f32) for _ in range(3))
    row(f"alpha*(A@B)+C f32 {n}", median_ms(lambda: f32(0.5) * (A @ B) + C), None)
    z = (rng.uniform(-1, 1, 1 << 22) + 1j * rng.uniform(-1, 1, 1 << 22)).astype(np.complex64)
    row("fft c64 2^22", median_ms(lambda: np.fft.fft(z)), None, "NumPy computes in complex128 (pocketfft)")
    z2 = (rng.uniform(-1, 1, (n, n)) + 1j * rng.uniform(-1, 1, (n, n))).astype(np.complex64)
    row(f"fft2 c64 {n}x{n}", median_ms(lambda: np.fft.fft2(z2)), None, "NumPy computes in complex128 (pocketfft)")
    x, k = rng.uniform(-1, 1, 1 << 22).astype(f32), rng.uniform(-1, 1, 16).astype(f32)
    row("conv f32 2^22, 16 taps", median_ms(lambda: np.convolve(x, k, mode="same")), None)
    sys.exit(0)

if only_ops:  # bench_ops.c's rows, as a NumPy user writes them (one thread: NumPy's own)
    n = int(1e7 * scale)
    x = np.random.default_rng(5).uniform(-1, 1, n).astype(f32)
    idx = ((x + f32(1)) * f32(0.5) * f32(999)).astype(np.int32)
    v = np.ones(1000000, dtype=f32)
    target = np.full(1000, 0.5, dtype=f32)

    def slice_update():
        u = x.copy()
        u[2000000:3000000] = v
        return f32(2) * u

    def add_at():
        t = target.copy()
        np.add.at(t, idx, x)
        return t

    row("cumsum f32", median_ms(lambda: np.cumsum(x)), None)
    row("sort f32", median_ms(lambda: np.sort(x, kind="stable")), None)
    row("argsort f32", median_ms(lambda: np.argsort(x, kind="stable")), None)
    row("histogram 256", median_ms(lambda: np.histogram(x, bins=256, range=(-1, 1))), None)
    row("bincount w 1000", median_ms(lambda: np.bincount(idx, weights=x, minlength=1000)), None)
    row("scatter_add 1000", median_ms(add_at), None, "np.add.at")
    row("x + roll(x)/2", median_ms(lambda: x + np.roll(x, 12345) * f32(0.5)), None)
    row("2 * pad(x) edge", median_ms(lambda: f32(2) * np.pad(x, 3, mode="edge")), None)
    row("2 * slice_update", median_ms(slice_update), None)
    sys.exit(0)

if not only_gallery:  # bench_cpu.c's, bench_views.c's and bench_rng.c's workloads (at module level: numexpr finds names there)
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
    del x, y

    # ------------------------------------------- bench_views.c 1, 2, 5: slices, a.T
    n = max(64, int(math.floor(4096 * math.sqrt(scale) / 64 + 0.5)) * 64)
    a = rng.uniform(-1, 1, (n, n)).astype(f32)
    quarter, ninth = f32(0.25), f32(1 / 9)
    out_np, out_ne = np.empty((n - 2, n - 2), f32), np.empty((n - 2, n - 2), f32)
    # the centre and its four neighbours over the interior
    STENCIL = dict(c=a[1:-1, 1:-1], north=a[:-2, 1:-1], south=a[2:, 1:-1], west=a[1:-1, :-2], east=a[1:-1, 2:])


    def stencil_np(c, north, south, west, east):
        np.subtract(quarter * ((north + south) + (east + west)), c, out=out_np)


    t_np = median_ms(lambda: stencil_np(**STENCIL))
    t_ne = median_ms(lambda: ne.evaluate("quarter * ((north + south) + (east + west)) - c",
                                         local_dict=dict(STENCIL, quarter=quarter), out=out_ne))
    row(f"stencil {n}x{n}", t_np, t_ne, f"numexpr vs NumPy max rel diff {rel_diff(out_ne, out_np):.1e}")

    SHIFTED = {f"s{3 * dy + dx}": a[dy:n - 2 + dy, dx:n - 2 + dx] for dy in range(3) for dx in range(3)}


    def blur_np():
        total = SHIFTED["s0"] + SHIFTED["s1"]
        for k in range(2, 9):
            total += SHIFTED[f"s{k}"]
        np.multiply(total, ninth, out=out_np)


    t_np = median_ms(blur_np)
    t_ne = median_ms(lambda: ne.evaluate("(" + " + ".join(SHIFTED) + ") * ninth",
                                         local_dict=dict(SHIFTED, ninth=ninth), out=out_ne))
    row(f"blur3x3 {n}x{n}", t_np, t_ne, f"numexpr vs NumPy max rel diff {rel_diff(out_ne, out_np):.1e}")
    del STENCIL, SHIFTED, out_np, out_ne

    # ------------------------------------------------- bench_views.c 3: per-axis sums
    rows, cols = max(1, int(8192 * scale)), 4096
    s2 = rng.uniform(-1, 1, (rows, cols)).astype(f32)
    for axis, label, length in ((1, "row sums", rows), (0, "col sums", cols)):
        out_np, out_ne = np.empty(length, f32), np.empty(length, f32)
        # in double, as PE and the C loop sum
        t_np = median_ms(lambda: np.sum(s2, axis=axis, dtype=np.float64, out=out_np))
        t_ne = median_ms(lambda: ne.evaluate(f"sum(s2, axis={axis})", out=out_ne))
        row(f"{label} {rows}x{cols}", t_np, t_ne,
            f"numexpr (f32 sums) vs NumPy (f64) max rel diff {rel_diff(out_ne, out_np):.1e}")
    del s2

    # ---------------------------------------------------- bench_views.c 4: softmax
    rows = max(1, int(4096 * scale))
    sm = rng.uniform(-4, 4, (rows, cols)).astype(f32)
    out_np, out_ne = np.empty((rows, cols), f32), np.empty((rows, cols), f32)


    def softmax_np():
        e = np.exp(sm - sm.max(axis=1, keepdims=True))
        np.divide(e, e.sum(axis=1, keepdims=True), out=out_np)


    def softmax_ne():
        e = ne.evaluate("exp(sm - m)", local_dict=dict(sm=sm, m=sm.max(axis=1, keepdims=True)))
        ne.evaluate("e / s", local_dict=dict(e=e, s=e.sum(axis=1, keepdims=True)), out=out_ne)


    t_np, t_ne = median_ms(softmax_np), median_ms(softmax_ne)
    row(f"softmax {rows}x{cols}", t_np, t_ne,
        f"numexpr vs NumPy max rel diff {float(np.max(np.abs(out_ne - out_np) / out_np)):.1e}")
    del sm, out_np, out_ne

    # ----------------------------------------------------------- bench_views.c 5: a + a.T
    out_np, out_ne = np.empty((n, n), f32), np.empty((n, n), f32)
    t_np = median_ms(lambda: np.add(a, a.T, out=out_np))
    t_ne = median_ms(lambda: ne.evaluate("a + at", local_dict=dict(a=a, at=a.T), out=out_ne))
    row(f"a+a^T {n}x{n}", t_np, t_ne, f"numexpr vs NumPy max rel diff {rel_diff(out_ne, out_np):.1e}")
    del a, out_np, out_ne

    # -------------------------------------------------------------- bench_views.c 6: gather
    n = max(1, int(16e6 * scale))
    g = rng.uniform(-1, 1, n).astype(f32)
    index = rng.integers(0, n, n, dtype=np.int32)
    out_np = np.empty(n, f32)
    t_np = median_ms(lambda: np.take(g, index, out=out_np))
    row(f"gather {n / 1e6:g}M", t_np, None, f"{int(np.count_nonzero(out_np != g[index]))} differ from g[index]")
    del g, index, out_np

    # ------------------------------------------- bench_rng.c: Monte Carlo pi, 10^8 draws
    # NumPy's default_rng (PCG64, one thread) draws x and y as float32 arrays,
    # then counts; numexpr takes the count (it has no generator).
    points = max(1, int(50e6 * scale))
    gen = np.random.default_rng(20261126)


    def pi_np():
        x = gen.random(points, dtype=f32)
        y = gen.random(points, dtype=f32)
        return np.count_nonzero(x * x + y * y < f32(1))


    def pi_ne():
        x = gen.random(points, dtype=f32)
        y = gen.random(points, dtype=f32)
        return int(ne.evaluate("sum(where(x * x + y * y < 1.0, 1, 0))", local_dict=dict(x=x, y=y)))


    t_np, t_ne = median_ms(pi_np), median_ms(pi_ne)
    row(f"monte carlo pi {2 * points / 1e6:g}M draws", t_np, t_ne, f"pi ~ {4 * pi_np() / points:.5f}")


# ------------------------------------------------- bench_gallery.c: the gallery
libc = ctypes.CDLL("libc.so.6")
RAND_MAX = f32(2147483647)  # (float)RAND_MAX, as the C code divides by


def c_rand(count, seed):
    """count draws of glibc's rand() after srand(seed), as float32 (the C code's (float)rand())."""
    libc.srand(seed)
    return np.array([libc.rand() for _ in range(count)], dtype=np.float64).astype(f32)


def c_filled(count, lo, hi, seed):
    """bench_util.h's filled(): lo + (hi - lo) * (float)rand() / (float)RAND_MAX in float32."""
    return f32(lo) + f32(hi - lo) * c_rand(count, seed) / RAND_MAX


def c_result(name, dtype, shape):
    """The C loop's result bench_gallery wrote (BENCH_GALLERY_RESULTS), or None."""
    folder = os.environ.get("BENCH_GALLERY_RESULTS")
    path = os.path.join(folder, name) if folder else None
    return np.fromfile(path, dtype=dtype).reshape(shape) if path and os.path.exists(path) else None


def against_c(name, got, summary, compare):
    """The check column: against the C loop's result where bench_gallery left it."""
    ref = c_result(name, got.dtype, got.shape)
    return f"vs C loop: {compare(got, ref)}" if ref is not None else f"{summary} (no C result to compare)"


def peers_of_the_gallery():
    # heat2d: 2048 x 2048, 10 steps, the top edge at 1, the boundary kept
    n, steps, alpha, four = 2048, 10, f32(0.2), f32(4)
    heat0 = np.zeros((n, n), f32)
    heat0[0, :] = 1
    u, v = np.empty_like(heat0), np.empty_like(heat0)

    def heat_np():
        nonlocal u, v
        np.copyto(u, heat0)
        np.copyto(v, heat0)  # the boundary, which no step changes
        for _ in range(steps):
            c = u[1:-1, 1:-1]
            v[1:-1, 1:-1] = c + alpha * (((u[:-2, 1:-1] + u[2:, 1:-1]) + u[1:-1, :-2]) + u[1:-1, 2:] - four * c)
            u, v = v, u

    t = median_ms(heat_np)
    row("heat2d 2048^2 x10", t, None, against_c("heat2d.f32", u, f"heat {float(u.sum(dtype=np.float64)):.6f}",
                                                 lambda a, b: f"max rel diff {rel_diff(a, b):.1e}"))
    del heat0, u, v

    # jacobi: 1024 x 1024 (f64), 100 sweeps, the largest change computed and
    # read (a Python float) after each, as the solver loop does
    n, sweeps = 1024, 100
    jac = {}

    def jacobi_np():
        u = np.zeros((n, n))
        u[0, :] = 1
        v = u.copy()  # the boundary, which no sweep changes
        for _ in range(sweeps):
            v[1:-1, 1:-1] = ((u[:-2, 1:-1] + u[2:, 1:-1]) + (u[1:-1, :-2] + u[1:-1, 2:])) * 0.25
            jac["change"] = float(np.abs(v - u).max())
            u, v = v, u
        jac["grid"] = u

    t = median_ms(jacobi_np)
    row("jacobi 1024^2 x100", t, None, against_c("jacobi.f64", jac["grid"], f"last change {jac['change']:.3g}",
                                                  lambda a, b: f"max abs diff {float(np.max(np.abs(a - b))):.1e}"))
    del jac

    # nbody: the accelerations of 4096 bodies, all pairs by broadcasting
    n, softening = 4096, f32(1e-2)
    x = c_filled(3 * n, -1, 1, 21).reshape(3, n)
    m = c_filled(n, 0.5 / n, 1.5 / n, 22)
    acc = np.empty((3, n), f32)

    def nbody_np():
        d = x[:, np.newaxis, :] - x[:, :, np.newaxis]  # d[k, i, j] = x[k, j] - x[k, i]
        r2 = (d * d).sum(axis=0) + softening
        w = m / (r2 * np.sqrt(r2))
        np.sum(d * w, axis=2, out=acc)

    t = median_ms(nbody_np)
    row("nbody 4096", t, None, against_c("nbody.f32", acc, f"sum |a| {float(np.abs(acc).sum(dtype=np.float64)):.6g}",
                                          lambda a, b: f"max rel diff (|a| > 1e-3) "
                                          f"{float(np.max(np.abs(a - b) / np.maximum(1e-3, np.abs(b)))):.1e}"))
    del x, m, acc

    # mandelbrot: 1024 x 768, 100 iterations, complex64, escaped points masked out
    w, h, iterations = 1024, 768, 100

    def coordinate(lo, hi, k, count):  # mandelbrot.c's, in float32
        return f32(lo) + (f32(hi) - f32(lo)) * k.astype(f32) / f32(count - 1)

    re = coordinate(-2.2, 0.8, np.arange(w), w)[np.newaxis, :]
    im = coordinate(1.2, -1.2, np.arange(h), h)[:, np.newaxis]
    c = (re + np.complex64(1j) * im).astype(np.complex64)
    counts = np.zeros((h, w), np.int32)

    def mandelbrot_np():
        z = np.zeros_like(c)
        counts.fill(0)
        for _ in range(iterations):
            bounded = z.real * z.real + z.imag * z.imag <= 4
            z[bounded] = z[bounded] * z[bounded] + c[bounded]
            counts[bounded] += 1

    t = median_ms(mandelbrot_np)
    row("mandelbrot 1024x768", t, None, against_c("mandelbrot.i32", counts, f"{int(np.count_nonzero(counts == iterations))} bounded",
                                                   lambda a, b: f"{int(np.count_nonzero(a != b))} of {a.size} counts differ"))
    del c, counts

    # kmeans: 10 Lloyd iterations, 200000 2-d points around 16 centres on a circle
    n, k, iterations = 200000, 16, 10
    draws = c_rand(2 * n, 31).reshape(n, 2)  # x's draw, then y's, point by point
    angle = [6.2831853 * (i % k) / k for i in range(k)]
    centre = np.array([[4 * math.cos(a), 4 * math.sin(a)] for a in angle], np.float64).astype(f32)
    points = centre[np.arange(n) % k] + f32(1.5) * (draws / RAND_MAX - f32(0.5))
    cent0 = points[np.arange(k) * 7].copy()
    result = {}

    def kmeans_np():
        cent = cent0.copy()
        for _ in range(iterations):
            d2 = ((points[:, np.newaxis, :] - cent[np.newaxis, :, :]) ** 2).sum(axis=2)
            assign = d2.argmin(axis=1)
            members = np.bincount(assign, minlength=k)
            sums = np.stack([np.bincount(assign, weights=points[:, j], minlength=k) for j in range(2)], axis=1)
            moved = members > 0
            cent[moved] = (sums[moved] / members[moved, np.newaxis]).astype(f32)
        result["centroids"] = cent

    t = median_ms(kmeans_np)
    cent = result["centroids"]
    row("kmeans 200000x16", t, None, against_c("kmeans.f32", cent, f"centroid 0 ({cent[0, 0]:.4f}, {cent[0, 1]:.4f})",
                                                lambda a, b: f"max rel diff {rel_diff(a, b):.1e}"))

    del points, draws

    # logreg: 200000 x 32 (f64), 50 gradient steps, the loss read after each;
    # the samples bench_gallery drew (BENCH_GALLERY_RESULTS), else NumPy's own
    n, d, steps, lr = 200000, 32, 50, 0.5
    x, y = c_result("logreg_x.f64", np.float64, (n, d)), c_result("logreg_y.f64", np.float64, (n,))
    if x is None or y is None:
        gen = np.random.default_rng(7)
        x = gen.uniform(-1, 1, (n, d))
        y = (x @ gen.uniform(-1, 1, d) > 0).astype(np.float64)
    fit = {}

    def logreg_np():
        w = np.zeros(d)
        for _ in range(steps):
            z = x @ w
            fit["loss"] = float(np.mean(np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z))) - y * z))
            g = x.T @ (1 / (1 + np.exp(-z)) - y)
            w = w - g * (lr / n)
        fit["w"] = w

    t = median_ms(logreg_np)
    row("logreg 200000x32 x50", t, None, against_c("logreg.f64", fit["w"], f"last loss {fit['loss']:.6f}",
                                                    lambda a, b: f"max rel diff {float(np.max(np.abs(a - b) / np.abs(b))):.1e}"))


peers_of_the_gallery()
if tsv:
    tsv.close()
