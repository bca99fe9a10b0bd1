#!/usr/bin/env python3
"""Writes synthetic seeds for fuzz_rans: gen_seeds_rans.py OUT_DIR (see fuzz_rans.c for modes)."""
import os
import random
import sys


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(7)
    seeds = {
        "uniform": bytes([1, 0, 0]) + bytes(rng.randrange(256) for _ in range(2000)),
        "peaked": bytes([1, 3, 0]) + bytes(int(rng.gauss(0, 6)) & 0xFF for _ in range(3000)),
        "one_symbol": bytes([1, 9, 0]) + bytes([42]) * 500,
        # byte 0 = 3 / 5: round trip with the int8 / int4-pair table hint
        "int8_law": bytes([3, 0, 0])
        + bytes(int(max(-127, min(127, rng.gauss(0, 9)))) & 0xFF for _ in range(3000)),
        "int4_law": bytes([5, 0, 0])
        + bytes(
            (int(max(-7, min(7, rng.gauss(0, 2)))) & 15) | ((int(max(-7, min(7, rng.gauss(0, 2)))) & 15) << 4)
            for _ in range(3000)
        ),
        "hostile": bytes([0, 16, 0, 16, 0, 0, 0, 1]) + bytes(31) + bytes([0x80, 0x20]) + bytes([0, 0, 0x80, 0]),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
