#!/usr/bin/env python3
"""The error of the attention backward's f16 dq partial sums (webgpu_ops_attn_sg.c sg_dq16,
fa_sg_dkdv_wo.wgsl DQ16) at the H200's shape, in float64, without a GPU (plain Python, no numpy).

    python3 bench/dq16_err_model.py [T]        (default 1024; about a minute at 1024)

One query at t = T - 1 (all T / 64 key blocks), head_dim 64, 12 random rows: scores N(0, 2²),
P = softmax, dP N(0, 1), dS = P ∘ (dP − D)·0.125 rounded to f16 (as the kernel's pds_), keys
N(mu, 1) rounded to f16 (mu: a key mean shared by all keys, 0, 1, 4). dq = Σ dS·K three ways:
float64 (the reference); fp32 parts (each 64-key block's part exact here, the sum, one f16
rounding: main's path); f16 parts (each part accumulated over 4 multiply-accumulates of 16 keys,
rounded to f16 after each, as the stand-in does and the hardware at least does; then the same
sum and rounding). Prints dq's error in f16 ulps of the float64 dq (mean and max over rows and
columns; the max is where dq is near 0). Only the parts' rounding is modelled: the kernels'
other f16 roundings (q, k, v, P) are the same in both paths. Source: our own."""
import math
import random
import struct
import sys


def h(x):
    """x rounded to f16 (nearest even), ±inf beyond its range"""
    try:
        return struct.unpack("e", struct.pack("e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def ulp(v):
    v = abs(v)
    return 2.0**-24 if v < 6.103515625e-05 else 2.0 ** (math.floor(math.log2(v)) - 10)


def main():
    T = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    HD, BC, KC = 64, 64, 16
    random.seed(1)
    for mu in (0.0, 1.0, 4.0):
        e32, e16, ex16 = [], [], []
        for _ in range(12):
            s = [random.gauss(0, 2) for _ in range(T)]
            m = max(s)
            p = [math.exp(x - m) for x in s]
            z = sum(p)
            p = [x / z for x in p]
            dp = [random.gauss(0, 1) for _ in range(T)]
            D = sum(a * b for a, b in zip(p, dp))
            ds = [h(a * (b - D) * 0.125) for a, b in zip(p, dp)]
            K = [[h(random.gauss(mu, 1)) for _ in range(HD)] for _ in range(T)]
            for d in range(HD):
                ref = sum(ds[j] * K[j][d] for j in range(T))
                p32 = p16 = 0.0
                for b0 in range(0, T, BC):
                    p32 += sum(ds[j] * K[j][d] for j in range(b0, b0 + BC))
                    acc = 0.0
                    for c0 in range(b0, b0 + BC, KC):
                        acc = h(acc + sum(ds[j] * K[j][d] for j in range(c0, c0 + KC)))
                    p16 += acc
                q32, q16, u = h(p32), h(p16), ulp(ref)
                e32.append(abs(q32 - ref) / u)
                e16.append(abs(q16 - ref) / u)
                ex16.append(abs(q16 - q32) / u)

        def f(v):
            return f"mean {sum(v) / len(v):.2f} max {max(v):.1f}"

        print(f"T {T} key mean {mu}: dq's error in f16 ulps of dq: fp32 parts {f(e32)}; f16 parts {f(e16)}; "
              f"f16 against fp32 parts {f(ex16)}")


if __name__ == "__main__":
    main()
