#!/usr/bin/env python3
"""Fits the rational approximations the CPU kernels compute erf and tanh with
(src/codegen/kernel_emitter.cc): f(x) = x P(x^2) / Q(x^2) for |x| <= bound,
Q(0) = 1, beyond which f is +-1 to float precision.

The fit minimises the largest relative error of f(x) / x over [0, bound]
(so small arguments keep their relative precision): weighted least squares
on the linearised problem P - g Q = 0 at Chebyshev points, the weights
divided by the last Q (Loeb) and multiplied by the last errors (Lawson), the
best of the iterations kept. It then evaluates the fit as the kernel does,
in float32 (clamp, Horner, x P / Q, clamp to [-1, 1]), against libm in
double, and prints the coefficients as float32 values.

  /usr/bin/python3 scripts/fit_odd_rational.py erf 6 4 3.92
  /usr/bin/python3 scripts/fit_odd_rational.py tanh 4 4 9
"""
import math
import sys

import numpy as np

FUNCTIONS = {"erf": math.erf, "tanh": math.tanh}


def fit(f, m, n, bound, points=4000, iterations=200):
    x = (np.cos(np.pi * (np.arange(points) + 0.5) / points)[::-1] + 1) / 2 * bound
    g = np.array([f(v) / v for v in x])
    s = (x / bound) ** 2  # in [0, 1]: a well-conditioned system
    powers_p = np.vstack([s**k for k in range(m + 1)]).T
    powers_q = np.vstack([s**k for k in range(1, n + 1)]).T
    a = np.hstack([powers_p, -g[:, None] * powers_q])
    lawson = np.ones(points)
    last_q = np.ones(points)
    best = None
    for _ in range(iterations):
        w = np.sqrt(lawson) / (g * last_q)
        coef, *_ = np.linalg.lstsq(a * w[:, None], g * w, rcond=None)
        p, q = coef[: m + 1], np.concatenate([[1.0], coef[m + 1 :]])
        last_q = np.polyval(q[::-1], s)
        err = (np.polyval(p[::-1], s) / last_q - g) / g
        if best is None or np.max(np.abs(err)) < best[0]:
            best = (np.max(np.abs(err)), p, q)
        lawson = lawson * np.abs(err)
        lawson /= lawson.sum()
    _, p, q = best
    # Back to powers of t = x^2, as float32.
    to_t = lambda c: np.array([c[k] / bound ** (2 * k) for k in range(len(c))], dtype=np.float32)
    return to_t(p), to_t(q)


def evaluate_f32(x, p, q, bound):
    f32 = np.float32
    xc = np.where(x > bound, f32(bound), np.where(x < -bound, f32(-bound), x)).astype(f32)
    t = xc * xc
    num = np.full_like(t, p[-1])
    for c in p[-2::-1]:
        num = num * t + c
    den = np.full_like(t, q[-1])
    for c in q[-2::-1]:
        den = den * t + c
    y = (xc * num) / den
    return np.where(y > 1, f32(1), np.where(y < -1, f32(-1), y)).astype(f32)


def main():
    name, m, n, bound = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    f = FUNCTIONS[name]
    p, q = fit(f, m, n, bound)
    x = np.linspace(-2 * bound, 2 * bound, 400001).astype(np.float32)
    want = np.array([f(float(v)) for v in x])
    got = evaluate_f32(x, p, q, bound)
    tiny = np.logspace(-30, 0, 2000).astype(np.float32)
    want_tiny = np.array([f(float(v)) for v in tiny])
    rel_tiny = np.abs(evaluate_f32(tiny, p, q, bound) - want_tiny) / want_tiny
    print(f"{name} x P(x^2) / Q(x^2), degrees {m}/{n}, |x| <= {bound}")
    print(f"float32: max |error| {np.max(np.abs(got - want)):.3g} on [{-2 * bound}, {2 * bound}], "
          f"max relative error {np.max(rel_tiny):.3g} on [1e-30, 1]")
    print("P:", ", ".join(repr(float(c)) for c in p))
    print("Q:", ", ".join(repr(float(c)) for c in q))


if __name__ == "__main__":
    main()
