#!/usr/bin/env python3
"""jax_grad.py — the JAX differential of PE's derivatives (issue 43):
random programs of element-wise ops, broadcasting, reductions, scans,
sorts, views and matrix products over f64 inputs, differentiated by PE
(grad_programs_driver: pe_grad of the sum of the output with respect to
every input, and pe_jvp along random tangents) and by JAX (jax.grad and
jax.jvp of the same program in float64), compared within 1e-9 of the
largest derivative.

    python3 tests/jax_grad.py DRIVER [SEED] [PROGRAMS]

Exits 77 (ctest: skipped) where JAX is not installed, 0 when every program
agrees, 1 naming the first that does not (its program text printed)."""
import os
import subprocess
import sys
import tempfile

try:
    import jax
    import jax.numpy as jnp
    import jax.scipy.special as jss
    import jax.scipy.stats as jst
    import numpy as np
except ImportError as e:
    print(f"jax_grad.py: skipped, {e.name} is not installed (pip install 'jax[cpu]')")
    sys.exit(77)

jax.config.update("jax_enable_x64", True)

if len(sys.argv) not in (2, 3, 4):
    sys.exit("usage: jax_grad.py DRIVER [SEED] [PROGRAMS]")
driver = sys.argv[1]
rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
programs = int(sys.argv[3]) if len(sys.argv) > 3 else 40

UNARY = {
    "neg": jnp.negative, "exp": jnp.exp, "sin": jnp.sin, "cos": jnp.cos, "tanh": jnp.tanh, "atan": jnp.arctan,
    "erf": jss.erf, "cdf_norm": jst.norm.cdf, "sigmoid": jax.nn.sigmoid, "square": lambda a: a * a,
    "sqrt1": lambda a: jnp.sqrt(a * a + 1), "log1": lambda a: jnp.log(a * a + 1),
}
BINARY = {
    "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "div1": lambda a, b: a / (b * b + 1),
    "max": jnp.maximum, "min": jnp.minimum, "pow1": lambda a, b: jnp.power(a * a + 1, b), "atan2": jnp.arctan2,
}


def reduce_op(name):
    f = {"sum": jnp.sum, "mean": jnp.mean, "amax": jnp.max, "var": jnp.var,
         "norm2": lambda a, axis=None: jnp.sqrt(jnp.sum(a * a, axis=axis))}[name]
    return lambda a, axis: f(a) if axis < 0 else f(a, axis=axis)


def broadcasts(small, big):
    """small's shape broadcasts to big's (aligned on the right)."""
    if len(small) > len(big):
        return False
    return all(s in (1, b) for s, b in zip(reversed(small), reversed(big)))


class Program:
    def __init__(self):
        self.lines, self.shapes, self.steps = [], [], []

    def emit(self, text, shape, step):
        self.lines.append(text)
        self.shapes.append(shape)
        self.steps.append(step)
        return len(self.shapes) - 1

    def draw(self, statements):
        m, n = int(rng.integers(2, 6)), int(rng.integers(2, 6))
        inputs = [(m, n), (n,), (m, n)][: int(rng.integers(1, 4))]
        for i, shape in enumerate(inputs):
            self.emit(f"input {len(shape)} {' '.join(map(str, shape))} x{i}.bin t{i}.bin", shape, ("input", i))
        for _ in range(statements):
            self.statement()
        return len(inputs)

    def statement(self):
        k = int(rng.integers(0, len(self.shapes)))
        shape = self.shapes[k]
        kind = rng.choice(["unary", "binary", "reduce", "axis", "view", "matmul"], p=[.3, .3, .1, .1, .12, .08])
        if kind == "unary" or (kind in ("reduce", "axis", "view") and len(shape) == 0):
            op = str(rng.choice(sorted(UNARY)))
            return self.emit(f"{op} {k}", shape, ("unary", op, k))
        if kind == "binary":
            others = [j for j, s in enumerate(self.shapes) if broadcasts(s, shape)]
            j = int(rng.choice(others))
            op = str(rng.choice(sorted(BINARY)))
            a, b = (k, j) if rng.random() < 0.5 else (j, k)
            return self.emit(f"{op} {a} {b}", shape, ("binary", op, a, b))
        if kind == "reduce":
            op = str(rng.choice(["sum", "mean", "amax", "var", "norm2"]))
            axis = int(rng.integers(-1, len(shape)))
            out = () if axis < 0 else tuple(s for d, s in enumerate(shape) if d != axis)
            return self.emit(f"{op} {k} {axis}", out, ("reduce", op, k, axis))
        if kind == "axis":
            op = str(rng.choice(["logsumexp", "softmax", "cumsum", "sort"]))
            axis = int(rng.integers(0, len(shape)))
            out = tuple(s for d, s in enumerate(shape) if d != axis) if op == "logsumexp" else shape
            return self.emit(f"{op} {k} {axis}", out, ("axis", op, k, axis))
        if kind == "view":
            axis = int(rng.integers(0, len(shape)))
            choices = ["flatten", "roll", "pad"] + (["transpose"] if len(shape) == 2 else []) + \
                      (["slice1"] if shape[axis] > 1 else [])
            op = str(rng.choice(choices))
            if op == "transpose":
                return self.emit(f"transpose {k}", shape[::-1], ("transpose", k))
            if op == "flatten":
                return self.emit(f"flatten {k}", (int(np.prod(shape)),), ("flatten", k))
            if op == "roll":
                shift = int(rng.integers(-3, 4))
                return self.emit(f"roll {k} {shift} {axis}", shape, ("roll", k, shift, axis))
            if op == "pad":
                before, after = int(rng.integers(0, 3)), int(rng.integers(0, 3))
                out = tuple(s + before + after if d == axis else s for d, s in enumerate(shape))
                return self.emit(f"pad {k} {axis} {before} {after}", out, ("pad", k, axis, before, after))
            out = tuple(s - 1 if d == axis else s for d, s in enumerate(shape))
            return self.emit(f"slice1 {k} {axis}", out, ("slice1", k, axis))
        # matmul: a 2-d slot by a 2-d or 1-d one whose first extent is its last
        pairs = [(a, b) for a, sa in enumerate(self.shapes) if len(sa) == 2
                 for b, sb in enumerate(self.shapes) if len(sb) in (1, 2) and sb[0] == sa[1]]
        if not pairs:
            op = str(rng.choice(sorted(UNARY)))
            return self.emit(f"{op} {k}", shape, ("unary", op, k))
        a, b = pairs[int(rng.integers(0, len(pairs)))]
        out = (self.shapes[a][0],) + self.shapes[b][1:]
        return self.emit(f"matmul {a} {b}", out, ("matmul", a, b))

    def evaluate(self, xs):
        v = []
        for step in self.steps:
            kind = step[0]
            if kind == "input":
                v.append(xs[step[1]])
            elif kind == "unary":
                v.append(UNARY[step[1]](v[step[2]]))
            elif kind == "binary":
                v.append(BINARY[step[1]](v[step[2]], v[step[3]]))
            elif kind == "reduce":
                v.append(reduce_op(step[1])(v[step[2]], step[3]))
            elif kind == "axis":
                op, a, axis = step[1], v[step[2]], step[3]
                v.append({"logsumexp": lambda: jss.logsumexp(a, axis=axis),
                          "softmax": lambda: jax.nn.softmax(a, axis=axis),
                          "cumsum": lambda: jnp.cumsum(a, axis=axis),
                          "sort": lambda: jnp.sort(a, axis=axis, stable=True)}[op]())
            elif kind == "transpose":
                v.append(v[step[1]].T)
            elif kind == "flatten":
                v.append(v[step[1]].reshape(-1))
            elif kind == "roll":
                v.append(jnp.roll(v[step[1]], step[2], axis=step[3]))
            elif kind == "pad":
                a, axis = v[step[1]], step[2]
                width = [(0, 0)] * a.ndim
                width[axis] = (step[3], step[4])
                v.append(jnp.pad(a, width))
            elif kind == "slice1":
                v.append(jnp.delete(v[step[1]], 0, axis=step[2]))
            else:
                v.append(jnp.matmul(v[step[1]], v[step[2]]))
        return jnp.sum(v[-1])


def main():
    for p in range(programs):
        prog = Program()
        n_inputs = prog.draw(int(rng.integers(3, 12)))
        with tempfile.TemporaryDirectory() as d:
            xs, ts = [], []
            for i in range(n_inputs):
                shape = prog.shapes[i]
                x, t = rng.uniform(-1.5, 1.5, shape), rng.uniform(-1, 1, shape)
                x.astype("<f8").tofile(os.path.join(d, f"x{i}.bin"))
                t.astype("<f8").tofile(os.path.join(d, f"t{i}.bin"))
                xs.append(x)
                ts.append(t)
            text = "\n".join(prog.lines + [f"output {len(prog.shapes) - 1}"]) + "\n"
            with open(os.path.join(d, "program.txt"), "w") as f:
                f.write(text)
            run = subprocess.run([driver, d], capture_output=True, text=True)
            if run.returncode != 0:
                print(f"program {p}: the driver failed: {run.stderr.strip()}\n{text}")
                return 1
            f = lambda *a: prog.evaluate(a)
            want = jax.grad(f, argnums=tuple(range(n_inputs)))(*[jnp.asarray(x) for x in xs])
            _, want_jvp = jax.jvp(f, tuple(jnp.asarray(x) for x in xs), tuple(jnp.asarray(t) for t in ts))
            scale = max(float(np.max(np.abs(np.asarray(w)))) for w in want) + 1e-300
            for i in range(n_inputs):
                got = np.fromfile(os.path.join(d, f"grad{i}.bin"), dtype="<f8")
                w = np.asarray(want[i], dtype=np.float64).reshape(-1)
                bad = ~(np.abs(got - w) <= 1e-9 * scale + 1e-12)
                if got.shape != w.shape or bad.any():
                    j = int(np.flatnonzero(bad)[0]) if got.shape == w.shape else -1
                    print(f"program {p}: input {i}, element {j}: PE {got[j] if j >= 0 else got.shape}, "
                          f"JAX {w[j] if j >= 0 else w.shape}\n{text}")
                    return 1
            got_jvp = float(np.fromfile(os.path.join(d, "jvp.bin"), dtype="<f8")[0])
            if not abs(got_jvp - float(want_jvp)) <= 1e-9 * (abs(float(want_jvp)) + scale) + 1e-12:
                print(f"program {p}: jvp PE {got_jvp!r}, JAX {float(want_jvp)!r}\n{text}")
                return 1
    print(f"jax_grad.py: {programs} random programs, PE's gradients and jvps equal JAX's (within 1e-9)")
    return 0


sys.exit(main())
