#!/usr/bin/env python3
"""Writes synthetic seeds for fuzz_weight_coder: gen_seeds_weight_coder.py OUT_DIR (see fuzz_weight_coder.c for modes)."""
import os
import random
import sys


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(11)

    def laplace(spread, qmax, n):
        # bytes whose value % (2 qmax + 1) - qmax is a two-sided geometric code
        vals = []
        for _ in range(n):
            m = min(qmax, int(rng.expovariate(1.0 / spread)))
            v = -m if rng.random() < 0.5 else m
            vals.append(v + qmax)
        return bytes(vals)

    seeds = {
        "int8_weights": bytes([1 | (3 << 2), 5, 0]) + laplace(25, 127, 3000),
        "int4_weights": bytes([3 | (7 << 2), 9, 1]) + laplace(2, 7, 2000),
        "zeros": bytes([1, 0, 0]) + bytes([127]) * 500,
        "extremes": bytes([1 | (1 << 2), 0, 0]) + bytes([0, 254]) * 300,
        "one_value": bytes([1, 0, 0, 120]),
        # hostile: config 0, arithmetic part 4 bytes, CRC, then junk
        "hostile": bytes([0, 65, 0]) + bytes([0, 4, 0, 0, 0, 1, 2, 3, 4]) + bytes(range(40)),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
