#!/usr/bin/env python3
"""Writes tiny synthetic image files as fuzz seeds for fuzz_image_io (python stdlib only).

Usage: gen_seeds_image_io.py OUTDIR

PNG (zlib + crc32 chunks; gray, RGB, RGBA, palette, gray+alpha, 16-bit, every filter type),
BMP (24/32-bit BI_RGB, 8-bit palette, top-down) and JPEG from a minimal baseline
encoder: every 8x8 block is flat (DC only, AC = end-of-block), 4:4:4, one quantization table of
all 8s, the standard luminance DC Huffman table and a one-symbol AC table. None is derived from
a real photo.
"""
import os
import struct
import sys
import zlib


def png_chunk(kind, body):
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def png(width, height, color_type, bit_depth, rows, palette=None, filt=0):
    raw = b"".join(bytes([filt]) + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n"
    out += png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0))
    if palette:
        out += png_chunk(b"PLTE", palette)
    out += png_chunk(b"IDAT", zlib.compress(raw))
    out += png_chunk(b"IEND", b"")
    return out


def bmp(width, height, bpp, pixel_rows, palette=b"", top_down=False):
    row_bytes = (width * bpp // 8 + 3) & ~3
    data = b"".join(r.ljust(row_bytes, b"\0") for r in pixel_rows)
    ncolors = len(palette) // 4
    off = 14 + 40 + len(palette)
    hdr = b"BM" + struct.pack("<IHHI", off + len(data), 0, 0, off)
    info = struct.pack("<IiiHHIIiiII", 40, width, -height if top_down else height, 1, bpp, 0,
                       len(data), 2835, 2835, ncolors, 0)
    return hdr + info + palette + data


class Bits:
    def __init__(self):
        self.out = bytearray()
        self.acc = 0
        self.n = 0

    def put(self, code, length):
        for i in range(length - 1, -1, -1):
            self.acc = (self.acc << 1) | ((code >> i) & 1)
            self.n += 1
            if self.n == 8:
                self.out.append(self.acc)
                if self.acc == 0xFF:
                    self.out.append(0)  # byte stuffing
                self.acc = 0
                self.n = 0

    def flush(self):
        while self.n:
            self.put(1, 1)
        return bytes(self.out)


DC_COUNTS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
DC_SYMBOLS = list(range(12))


def canonical_codes(counts, symbols):
    codes, code, k = {}, 0, 0
    for length in range(1, 17):
        for _ in range(counts[length - 1]):
            codes[symbols[k]] = (code, length)
            code += 1
            k += 1
        code <<= 1
    return codes


def jpeg(width, height, comps, block_value):
    """block_value(component, bx, by) -> 0..255 flat value of that 8x8 block."""
    def seg(marker, body):
        return struct.pack(">BBH", 0xFF, marker, len(body) + 2) + body

    out = b"\xff\xd8"
    out += seg(0xE0, b"JFIF\0" + bytes([1, 1, 0, 0, 1, 0, 1, 0, 0]))
    out += seg(0xDB, bytes([0]) + bytes([8] * 64))
    sof = struct.pack(">BHHB", 8, height, width, comps)
    for c in range(comps):
        sof += bytes([c + 1, 0x11, 0])
    out += seg(0xC0, sof)
    out += seg(0xC4, bytes([0x00]) + bytes(DC_COUNTS) + bytes(DC_SYMBOLS))
    out += seg(0xC4, bytes([0x10]) + bytes([1] + [0] * 15) + bytes([0x00]))  # AC: EOB = "0"
    sos = bytes([comps])
    for c in range(comps):
        sos += bytes([c + 1, 0x00])
    out += seg(0xDA, sos + bytes([0, 63, 0]))
    dc = canonical_codes(DC_COUNTS, DC_SYMBOLS)
    bits = Bits()
    pred = [0] * comps
    for by in range((height + 7) // 8):
        for bx in range((width + 7) // 8):
            for c in range(comps):
                q = block_value(c, bx, by) - 128  # DC = 8 * (v - 128), quantized by 8
                diff = q - pred[c]
                pred[c] = q
                mag = abs(diff)
                cat = mag.bit_length()
                code, length = dc[cat]
                bits.put(code, length)
                if cat:
                    bits.put(diff if diff > 0 else diff + (1 << cat) - 1, cat)
                bits.put(0, 1)  # EOB
    return out + bits.flush() + b"\xff\xd9"


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    seeds = {}
    w, h = 5, 3
    gray = [bytes((x * 40 + y * 20) & 0xFF for x in range(w)) for y in range(h)]
    rgb = [bytes(v for x in range(w) for v in (x * 50, y * 80, 200 - x * 30)) for y in range(h)]
    rgba = [bytes(v for x in range(w) for v in (x * 50, y * 80, 9, 255 - x)) for y in range(h)]
    for filt in range(5):
        seeds["gray_f%d.png" % filt] = png(w, h, 0, 8, gray, filt=filt)
    seeds["rgb.png"] = png(w, h, 2, 8, rgb)
    seeds["rgba.png"] = png(w, h, 6, 8, rgba, filt=4)
    seeds["gray_alpha.png"] = png(w, h, 4, 8, [bytes(v for x in range(w) for v in (x * 9, 128))
                                               for _ in range(h)])
    seeds["palette.png"] = png(w, h, 3, 8, [bytes((x + y) % 3 for x in range(w))
                                            for y in range(h)], palette=bytes(range(9)))
    seeds["rgb16.png"] = png(2, 2, 2, 16, [bytes(range(12)), bytes(range(12, 24))])
    seeds["gray1.png"] = png(8, 2, 0, 1, [b"\xa5", b"\x5a"])
    seeds["rgb24.bmp"] = bmp(w, h, 24, [bytes(v for x in range(w) for v in (x * 50, y * 80, 7))
                                        for y in range(h)])
    seeds["bgra32_topdown.bmp"] = bmp(w, h, 32, rgba, top_down=True)
    pal = b"".join(bytes([i * 60, 255 - i * 60, i * 20, 0]) for i in range(4))
    seeds["pal8.bmp"] = bmp(w, h, 8, [bytes((x + y) % 4 for x in range(w)) for y in range(h)], pal)
    seeds["gray8x8.jpg"] = jpeg(8, 8, 1, lambda c, bx, by: 200)
    seeds["gray17x9.jpg"] = jpeg(17, 9, 1, lambda c, bx, by: 40 + 50 * bx + 30 * by)
    seeds["rgb16x16.jpg"] = jpeg(16, 16, 3, lambda c, bx, by: [180, 90, 128][c] + 20 * bx - 10 * by)
    for name, data in seeds.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
