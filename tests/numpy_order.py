#!/usr/bin/python3
"""numpy_order.py — the NumPy differential of the order ops (issue 39):
random cases of cumsum, cumprod, sort, argsort, histogram, bincount and
scatter_add (every dtype they take, every axis, NaN, -0.0, ties, values on
bin edges, rows short and long), computed by PE (numpy_order_driver) and by
NumPy, compared exactly where the arithmetic is (sorts, indices, counts,
i32 sums) and within the rounding of f32/f64 sums elsewhere (PE adds in
blocks and groups, NumPy in sequence).

    /usr/bin/python3 tests/numpy_order.py DRIVER [SEED]

Exits 0 when every case agrees, 1 naming the first that does not."""
import os
import subprocess
import sys
import tempfile

import numpy as np

if len(sys.argv) not in (2, 3):
    sys.exit("usage: numpy_order.py DRIVER [SEED]")
driver = sys.argv[1]
rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) == 3 else 1)
NAMES = {np.float32: "f32", np.float64: "f64", np.int32: "i32", np.bool_: "bool"}


def values(dtype, shape):
    """Random values with what breaks sorts and bins: NaN, -0.0, infinities, many ties."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype == np.int32:
        x = rng.integers(-50, 50, shape).astype(np.int32)
        flat = x.reshape(-1)
        flat[rng.random(flat.size) < 0.01] = np.iinfo(np.int32).min
        flat[rng.random(flat.size) < 0.01] = np.iinfo(np.int32).max
        return x
    x = rng.uniform(-2, 2, shape).astype(dtype)
    flat = x.reshape(-1)
    for value, p in ((np.nan, 0.02), (-0.0, 0.02), (0.0, 0.02), (np.inf, 0.005), (-np.inf, 0.005)):
        flat[rng.random(flat.size) < p] = value
    ties = rng.random(flat.size) < 0.2
    flat[ties] = np.round(flat[ties] * 4) / 4  # many equal values, some on histogram edges
    return x


def shape_and_axis():
    rank = int(rng.integers(1, 4))
    long_axis = rng.random() < 0.3
    shape = [int(rng.integers(1, 9)) for _ in range(rank)]
    axis = int(rng.integers(0, rank))
    if long_axis:
        shape[axis] = int(rng.choice([33, 1000, 20000, 140000]))  # insertion, radix, past a scan chunk, all threads
    return tuple(shape), axis


class Cases:
    """The case list for the driver and, per case, its result's file, dtype and check."""
    def __init__(self, d):
        self.d, self.lines, self.checks, self.files = d, [], [], 0

    def file(self, a):
        self.files += 1
        name = f"in{self.files}.bin"
        a.astype(a.dtype.newbyteorder("<")).tofile(os.path.join(self.d, name))
        return name

    def add(self, op, x, args, result_dtype, check, dtype_name=None):
        """check(got) -> None, or what differs (got: the result, flat)."""
        out = f"out{len(self.checks)}.bin"
        dims = " ".join(str(s) for s in x.shape)
        name = dtype_name or NAMES[x.dtype.type]
        self.lines.append(f"{op} {name} {x.ndim} {dims} {self.file(x)} {out} {args}")
        self.checks.append((f"{op} {name} {x.shape} {args}", out, result_dtype, check))


def close(want, tolerance):
    """Within tolerance (an array of want's shape, or a number) of want; NaN equals NaN."""
    want = np.asarray(want).reshape(-1)
    tol = np.broadcast_to(np.asarray(tolerance, dtype=np.float64).reshape(-1), want.shape)

    def check(got):
        if got.shape != want.shape:
            return f"{got.size} elements, want {want.size}"
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~((g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= tol))
        if bad.any():
            i = np.flatnonzero(bad)[0]
            return f"element {i}: {got[i]!r}, want {want[i]!r} (within {tol[i]:.3g})"
        return None
    return check


def exact(want):
    """Bit for bit (a NaN's payload aside)."""
    want = np.asarray(want).reshape(-1)

    def check(got):
        if got.shape != want.shape:
            return f"{got.size} elements, want {want.size}"
        if got.dtype.kind == "f":
            bits = np.uint32 if got.dtype == np.float32 else np.uint64
            same = (got.view(bits) == want.astype(got.dtype).view(bits)) | (np.isnan(got) & np.isnan(want))
        else:
            same = got == want
        if not same.all():
            i = np.flatnonzero(~same)[0]
            return f"element {i}: {got[i]!r}, want {want[i]!r}"
        return None
    return check


def stable_order(x, axis, descending):
    """NumPy's stable argsort, NaN last; descending: the numbers reversed, ties and NaN as they were."""
    if descending:
        key = -x.astype(np.float64) if x.dtype != np.int32 else -x.astype(np.int64)
        return np.argsort(key, axis=axis, kind="stable")
    return np.argsort(x, axis=axis, kind="stable")


def finite(dtype, shape):
    return rng.uniform(-1, 1, shape).astype(dtype) if dtype != np.int32 else rng.integers(-9, 9, shape).astype(dtype)


def main():
    with tempfile.TemporaryDirectory() as d:
        c = Cases(d)
        for _ in range(60):
            shape, axis = shape_and_axis()
            dtype = [np.float32, np.float64, np.int32, np.bool_][int(rng.integers(0, 4))]
            x = values(dtype, shape)
            n = x.shape[axis]
            if dtype in (np.float32, np.float64):
                x[~np.isfinite(x)] = 0.5  # NaN and inf run through both scans alike: finite values test more
                eps = float(np.finfo(dtype).eps)
                wide = x.astype(np.float64)
                c.add("cumsum", x, str(axis), dtype,
                      close(np.cumsum(wide, axis=axis), 2 * n * eps * np.cumsum(np.abs(wide), axis=axis)))
                y = (1 + 0.01 * x).astype(dtype)
                want = np.cumprod(y.astype(np.float64), axis=axis)
                c.add("cumprod", y, str(axis), dtype, close(want, 4 * n * eps * np.abs(want)))
            else:  # i32 wraps; a bool's sum counts
                c.add("cumsum", x, str(axis), np.int32, exact(np.cumsum(x.astype(np.int64), axis=axis).astype(np.int32)))
            if dtype == np.bool_:
                continue
            xs = values(dtype, shape)
            for desc in (0, 1):
                order = stable_order(xs, axis, desc)
                c.add("argsort", xs, f"{axis} {desc}", np.int32, exact(order.astype(np.int32)))
                c.add("sort", xs, f"{axis} {desc}", dtype, exact(np.take_along_axis(xs, order, axis)))
            bins = int(rng.choice([1, 4, 10, 256]))
            lo, hi = (-1.0, 1.0) if rng.random() < 0.5 else (0.0, 1.5)
            c.add("histogram", xs, f"{bins} {lo!r} {hi!r}", np.int32,
                  exact(np.histogram(xs, bins=bins, range=(lo, hi))[0].astype(np.int32)))
        for _ in range(20):
            shape, _ = shape_and_axis()
            length = int(rng.choice([1, 7, 1000]))
            idx = rng.integers(0, length, shape).astype(np.int32)
            flat = idx.reshape(-1)
            c.add("bincount", idx, f"{length} -", np.int32, exact(np.bincount(flat, minlength=length).astype(np.int32)))
            wdt = [np.float32, np.float64, np.int32][int(rng.integers(0, 3))]
            w = finite(wdt, shape)
            wide = w.reshape(-1).astype(np.float64)
            eps = float(np.finfo(wdt).eps) if wdt != np.int32 else 0.0
            c.add("bincount", idx, f"{length} {NAMES[wdt]} {c.file(w)}", wdt,
                  close(np.bincount(flat, weights=wide, minlength=length),
                        2 * eps * np.bincount(flat, weights=np.abs(wide), minlength=length)))
            tdt = [np.float32, np.float64, np.int32][int(rng.integers(0, 3))]
            target, v = finite(tdt, length), finite(tdt, shape)
            eps = float(np.finfo(tdt).eps) if tdt != np.int32 else 0.0
            want, mags = target.astype(np.float64), np.abs(target.astype(np.float64))
            np.add.at(want, flat, v.reshape(-1).astype(np.float64))
            np.add.at(mags, flat, np.abs(v.reshape(-1).astype(np.float64)))
            c.add("scatter_add", idx, f"{length} {c.file(target)} {c.file(v)}", tdt, close(want, 2 * eps * mags),
                  dtype_name=NAMES[tdt])
        with open(os.path.join(d, "cases.txt"), "w") as f:
            f.write("\n".join(c.lines) + "\n")
        run = subprocess.run([driver, d], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"numpy_order: the driver failed: {run.stderr.strip()}")
        for what, out, dtype, check in c.checks:
            why = check(np.fromfile(os.path.join(d, out), dtype=np.dtype(dtype).newbyteorder("<")))
            if why:
                sys.exit(f"numpy_order: {what}: {why}")
        print(f"numpy_order: {len(c.checks)} cases agree with NumPy {np.__version__}")


main()
