#!/usr/bin/env python3
"""png_check.py — reads a PNG with Python's own zlib (independently of
examples/png.h, which wrote it) and checks it against the PGM the same run
wrote: the signature, every chunk's CRC, IHDR (8-bit grey or indexed, no
interlace), a 256-colour PLTE for an indexed image, the IDAT stream
inflated into rows of filter type 0 whose bytes equal the PGM's pixels.

    png_check.py image.png image.pgm        exit 0 when they agree"""
import struct
import sys
import zlib


def fail(why):
    sys.exit(f"png_check: {why}")


def pgm(path):
    data = open(path, "rb").read()
    fields, at = [], 0
    while len(fields) < 4:  # P5, width, height, maxval: whitespace-separated
        while data[at:at + 1].isspace():
            at += 1
        start = at
        while not data[at:at + 1].isspace():
            at += 1
        fields.append(data[start:at])
    if fields[0] != b"P5" or fields[3] != b"255":
        fail(f"{path} is not an 8-bit P5 PGM")
    w, h = int(fields[1]), int(fields[2])
    pixels = data[at + 1:]
    if len(pixels) != w * h:
        fail(f"{path}: {len(pixels)} pixel bytes for {w} x {h}")
    return w, h, pixels


def png_chunks(data, fail, where=""):
    """A PNG file's (kind, body) chunks, its signature and every chunk's CRC
    checked (fail(why), why prefixed by where).  check_profile_html.py reads
    its screenshots with it too."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{where}no PNG signature")
    at, chunks = 8, []
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        (crc,) = struct.unpack(">I", data[at + 8 + n:at + 12 + n])
        if zlib.crc32(kind + body) != crc:
            fail(f"{where}bad CRC in the {kind!r} chunk")
        chunks.append((kind, body))
        at += 12 + n
    return chunks


def png(path):
    chunks = png_chunks(open(path, "rb").read(), fail)
    kinds = [k for k, _ in chunks]
    if kinds[0] != b"IHDR" or kinds[-1] != b"IEND" or b"IDAT" not in kinds:
        fail(f"chunks {kinds}")
    w, h, depth, colour, method, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if depth != 8 or colour not in (0, 3) or (method, filtering, interlace) != (0, 0, 0):
        fail(f"IHDR depth {depth} colour type {colour} methods {method} {filtering} {interlace}")
    palette = [b for k, b in chunks if k == b"PLTE"]
    if colour == 3 and (len(palette) != 1 or len(palette[0]) != 256 * 3):
        fail("an indexed image without a 256-colour PLTE")
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    if len(raw) != h * (w + 1):
        fail(f"{len(raw)} inflated bytes for {h} rows of {w} + 1")
    rows = [raw[y * (w + 1):(y + 1) * (w + 1)] for y in range(h)]
    if any(r[0] != 0 for r in rows):
        fail("a row with a filter other than none")
    return w, h, b"".join(r[1:] for r in rows), colour


def main():
    w, h, pixels, colour = png(sys.argv[1])
    pw, ph, reference = pgm(sys.argv[2])
    if (w, h) != (pw, ph):
        fail(f"PNG {w} x {h}, PGM {pw} x {ph}")
    differ = sum(a != b for a, b in zip(pixels, reference))
    print(f"PNG {w} x {h} ({'indexed' if colour == 3 else 'grey'}), {len(open(sys.argv[1], 'rb').read())} bytes: "
          f"{differ} pixels differ from the PGM's")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
