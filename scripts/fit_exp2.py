#!/usr/bin/python3
"""Coefficients of the polynomial 2^f ~ p(f) on [0, 1] used by the flash kernel's exp2
(src/engine/attention/flash/microkernels_impl.hpp: 2^x = p(x - floor(x)) * 2^floor(x)).
Run: /usr/bin/python3 scripts/fit_exp2.py

Near-minimax in relative error, by Lawson's iteratively reweighted least squares on Chebyshev
nodes; prints the float32 coefficients and the worst relative error of the float32 polynomial.
"""
import numpy as np

DEGREE = 6
x = 0.5 + 0.5 * np.cos(np.linspace(0.0, np.pi, 4000))
A = np.vander(x, DEGREE + 1, increasing=True)
y = 2.0 ** x
w = np.ones_like(x)
for _ in range(300):
    c = np.linalg.lstsq(A * (w / y)[:, None], w, rcond=None)[0]  # minimise w * (p - y) / y
    err = np.abs(A @ c - y) / y
    w *= np.sqrt(err + 1e-30)
    w /= w.max()
c32 = c.astype(np.float32)
xs = np.linspace(0.0, 1.0, 400001)
worst = np.max(np.abs(np.polyval(c32[::-1].astype(np.float64), xs) - 2.0 ** xs) / 2.0 ** xs)
print("coefficients c0..c%d:" % DEGREE, ", ".join("%.9ef" % v for v in c32))
print("max relative error: %.3g (float32 epsilon/2 = %.3g)" % (worst, np.finfo(np.float32).eps / 2))
