#!/usr/bin/env python3
"""Checks that a PNG screenshot shows something: decodes it with the standard library only (zlib),
then requires the expected size, enough distinct colours and enough pixels that differ from the
most common (background) colour.

usage: png_check.py FILE WIDTH HEIGHT [MIN_COLOURS] [MIN_INK_FRACTION]
       png_check.py --self-test DIR    (a blank PNG written to DIR must fail the check)
Prints one line with the figures; exit 0 when the picture passes, 1 otherwise.
"""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, hdr = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if hdr is None:
        raise ValueError("no IHDR chunk")
    width, height, depth, colour, _, _, interlace = hdr
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError("unsupported PNG (depth %d, colour type %d, interlace %d)" %
                         (depth, colour, interlace))
    return width, height, channels, zlib.decompress(b"".join(idat))


def rows(width, height, bpp, raw):
    """Yields the unfiltered rows (PNG filter types 0-4)."""
    stride = width * bpp
    prev = bytearray(stride)
    pos = 0
    for _ in range(height):
        ftype, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        elif ftype != 0:
            raise ValueError("bad filter type %d" % ftype)
        yield line
        prev = line


def write_blank(path, width, height):
    raw = b"".join(b"\x00" + b"\xf3\xf5\xf7" * width for _ in range(height))
    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main():
    if sys.argv[1] == "--self-test":
        path = sys.argv[2] + "/blank.png"
        write_blank(path, 64, 32)
        sys.argv = [sys.argv[0], path, "64", "32"]
        return 0 if main() == 1 else 1
    path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    min_colours = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    min_ink = float(sys.argv[5]) if len(sys.argv) > 5 else 0.02
    width, height, bpp, raw = read_png(path)
    counts = {}
    for line in rows(width, height, bpp, raw):
        for i in range(0, len(line), bpp):
            px = bytes(line[i:i + bpp])
            counts[px] = counts.get(px, 0) + 1
    total = width * height
    background = max(counts.values())
    ink = 1 - background / total
    ok = (width, height) == (want_w, want_h) and len(counts) >= min_colours and ink >= min_ink
    print("%s: %dx%d, %d colours, %.1f%% of pixels differ from the background: %s" %
          (path, width, height, len(counts), 100 * ink, "ok" if ok else "BLANK OR WRONG SIZE"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
