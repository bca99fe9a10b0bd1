#!/usr/bin/env python3
"""Writes tiny synthetic KSME (encrypted .ksm) containers as fuzz seeds for fuzz_ksm_crypt.

Usage: gen_seeds_ksm_crypt.py OUTDIR

Encrypts container version 2 (independent crypto_aead_xchacha20poly1305_ietf chunks) and
version 1 (crypto_secretstream_xchacha20poly1305) with libsodium through ctypes (python stdlib
only; needs libsodium installed) under the fixed key bytes 0..31 that the fuzz target uses. The
plaintexts are synthetic byte patterns (a "KSMF" prefix and filler), never real models, in sizes
that hit the chunk edges: 1 byte, one chunk exactly, one chunk plus one byte, several chunks.
Also writes a few hand-made broken headers.
"""
import ctypes
import ctypes.util
import os
import struct
import sys

FUZZ_KEY = bytes(range(32))
CHUNK = 4096
HEADER_BYTES = 64
ABYTES = 17
TAG_MESSAGE = 0
TAG_FINAL = 3


def load_sodium():
    name = ctypes.util.find_library("sodium") or "libsodium.so.23"
    lib = ctypes.CDLL(name)
    if lib.sodium_init() < 0:
        raise RuntimeError("sodium_init failed")
    return lib


def encrypt(lib, plain, chunk=CHUNK):
    header = bytearray(HEADER_BYTES)
    header[0:4] = b"KSME"
    struct.pack_into("<HHB", header, 4, 1, HEADER_BYTES, 1)
    struct.pack_into("<IQ", header, 12, chunk, len(plain))
    state = ctypes.create_string_buffer(lib.crypto_secretstream_xchacha20poly1305_statebytes())
    stream_header = ctypes.create_string_buffer(24)
    lib.crypto_secretstream_xchacha20poly1305_init_push(state, stream_header, FUZZ_KEY)
    header[24:48] = stream_header.raw
    ad = bytes(header)
    out = bytearray(ad)
    chunks = [plain[i:i + chunk] for i in range(0, len(plain), chunk)]
    for i, m in enumerate(chunks):
        c = ctypes.create_string_buffer(len(m) + ABYTES)
        clen = ctypes.c_ulonglong(0)
        tag = TAG_FINAL if i == len(chunks) - 1 else TAG_MESSAGE
        lib.crypto_secretstream_xchacha20poly1305_push(
            state, c, ctypes.byref(clen), m, ctypes.c_ulonglong(len(m)), ad,
            ctypes.c_ulonglong(len(ad)), ctypes.c_ubyte(tag))
        out += c.raw[:clen.value]
    return bytes(out)


def encrypt_v2(lib, plain, chunk=CHUNK):
    header = bytearray(HEADER_BYTES)
    header[0:4] = b"KSME"
    struct.pack_into("<HHB", header, 4, 2, HEADER_BYTES, 2)
    struct.pack_into("<IQ", header, 12, chunk, len(plain))
    header[24:40] = bytes((7 * i + 1) & 0xFF for i in range(16))  # fixed: seeds are reproducible
    ad = bytes(header)
    out = bytearray(ad)
    for i in range(0, len(plain), chunk):
        m = plain[i:i + chunk]
        nonce = bytes(header[24:40]) + struct.pack("<Q", i // chunk)
        c = ctypes.create_string_buffer(len(m) + 16)
        clen = ctypes.c_ulonglong(0)
        lib.crypto_aead_xchacha20poly1305_ietf_encrypt(
            c, ctypes.byref(clen), m, ctypes.c_ulonglong(len(m)), ad,
            ctypes.c_ulonglong(len(ad)), None, nonce, FUZZ_KEY)
        out += c.raw[:clen.value]
    return bytes(out)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    lib = load_sodium()

    def filler(n):
        # a .ksm-looking prefix (magic, version 1.0, header size) so decrypted seeds reach the
        # inner parser's later checks
        body = b"KSMF" + struct.pack("<HHI", 1, 0, 64)
        body += bytes((i * 31 + 7) & 0xFF for i in range(max(0, n - len(body))))
        return body[:n]

    seeds = {}
    for n in (1, 100, CHUNK, CHUNK + 1, 3 * CHUNK + 5):
        seeds[f"plain_{n}.ksme"] = encrypt(lib, filler(n))
        seeds[f"v2_plain_{n}.ksme"] = encrypt_v2(lib, filler(n))
    good = seeds[f"plain_{CHUNK + 1}.ksme"]
    seeds["short_header.ksme"] = good[:40]
    seeds["truncated.ksme"] = good[:-1]
    bad_version = bytearray(good)
    bad_version[4] = 9
    seeds["bad_version.ksme"] = bytes(bad_version)
    huge = bytearray(good)
    struct.pack_into("<Q", huge, 16, (1 << 63) + 5)
    seeds["huge_plain.ksme"] = bytes(huge)
    for name, data in seeds.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
