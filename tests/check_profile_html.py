#!/usr/bin/env python3
"""check_profile_html.py DOM KERNELS WAITED MIN_WAIT_MS [PNG WIDTH HEIGHT]
— checks pe-prof's HTML page as headless Chromium left it (--dump-dom):

  * <body> says the script drew (data-drawn="yes"), with timeline boxes and
    line bars, and that everything fits: no SVG label outside its SVG
    (data-clipped="0") and no page wider than the window (data-overflow="0");
  * the kernel table (table#kernels) holds exactly the profile's kernels:
    its label cells are the lines of the file KERNELS (pe-prof report
    --by kernel's labels), each with a time and at least one run;
  * the waits table (table#waits) has the line WAITED (file:line, matched at
    the end of the label) with at least MIN_WAIT_MS milliseconds waited;
  * the summary's pool utilisation is a percentage in (0, 100].

With PNG, also the screenshot: a PNG (signature, every chunk's CRC) of
WIDTH x HEIGHT whose pixels, inflated, are not all one value."""
import collections
import html.parser
import os
import re
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from png_check import png_chunks  # noqa: E402  (beside this file: the mandelbrot PNG's reader)


def fail(why):
    sys.exit(f"check_profile_html: {why}")


class Dom(html.parser.HTMLParser):
    """The body's attributes, each table's rows (cells' text) by table id,
    and the summary's items."""

    def __init__(self):
        super().__init__()
        self.body = {}
        self.tables = collections.defaultdict(list)
        self.summary = []
        self.table = None
        self.in_tbody = False
        self.row = None
        self.cell = None
        self.in_summary = False
        self.item = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "table":
            self.table = a.get("id")
        elif tag == "tbody":
            self.in_tbody = True
        elif tag == "tr" and self.table and self.in_tbody:
            self.row = []
        elif tag == "td" and self.row is not None:
            self.cell = []
        elif tag == "ul" and a.get("id") == "summary":
            self.in_summary = True
        elif tag == "li" and self.in_summary:
            self.item = []

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.row.append("".join(self.cell))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.tables[self.table].append(self.row)
            self.row = None
        elif tag == "tbody":
            self.in_tbody = False
        elif tag == "table":
            self.table = None
        elif tag == "li" and self.item is not None:
            self.summary.append("".join(self.item))
            self.item = None
        elif tag == "ul":
            self.in_summary = False

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)
        if self.item is not None:
            self.item.append(data)


def check_png(path, width, height):
    chunks = png_chunks(open(path, "rb").read(), fail, f"{path}: ")
    if chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        fail(f"{path}: chunks {[k for k, _ in chunks]}")
    w, h = struct.unpack(">II", chunks[0][1][:8])
    if (w, h) != (width, height):
        fail(f"{path}: {w} x {h}, expected {width} x {height}")
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    if len(set(raw[:: max(1, len(raw) // 200000)])) < 3:
        fail(f"{path}: a blank image")


def main():
    if len(sys.argv) not in (5, 8):
        sys.exit(__doc__)
    dom_path, kernels_path, waited, min_wait_ms = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    dom = Dom()
    dom.feed(open(dom_path, encoding="utf-8").read())
    body = dom.body
    if body.get("data-drawn") != "yes":
        fail(f"the page did not draw: <body {body}>")
    for key in ("data-events", "data-bars"):
        if int(body.get(key, "0")) <= 0:
            fail(f"nothing drawn: {key}={body.get(key)}")
    if body.get("data-clipped") != "0":
        fail(f"{body.get('data-clipped')} SVG labels lie outside their SVG (cut off)")
    if body.get("data-overflow") != "0":
        fail(f"the page is {body.get('data-overflow')} px wider than the window")

    want = collections.Counter(line.rstrip("\n") for line in open(kernels_path, encoding="utf-8") if line.strip())
    rows = dom.tables["kernels"]
    got = collections.Counter(r[-1] for r in rows)
    if got != want:
        fail(f"the kernel table holds {sorted(got.elements())}, the profile {sorted(want.elements())}")
    for r in rows:  # time ms, %, runs, elements, GB/s, device, code from, compile ms, label
        if len(r) != 9 or float(r[0]) < 0 or int(r[2]) < 1:
            fail(f"kernel row {r}")
    if body.get("data-kernels") != str(len(rows)):
        fail(f"data-kernels={body.get('data-kernels')} for {len(rows)} rows")

    waits = dom.tables["waits"]  # waited ms, waits, per wait ms, line
    hit = [r for r in waits if r[-1].endswith("/" + waited) or r[-1] == waited]
    if not hit:
        fail(f"the waits table lacks {waited}: {waits}")
    if float(hit[0][0]) < min_wait_ms or int(hit[0][1]) < 1:
        fail(f"{waited} waited {hit[0][0]} ms in {hit[0][1]} waits; expected at least {min_wait_ms} ms")
    waited_ms = [float(r[0]) for r in waits]
    if waited_ms != sorted(waited_ms, reverse=True):
        fail(f"the waits are not longest first: {waited_ms}")

    pool = [s for s in dom.summary if s.startswith("pool utilisation ")]
    m = re.match(r"pool utilisation ([0-9.]+)%$", pool[0]) if pool else None
    if not m or not 0 < float(m.group(1)) <= 100:
        fail(f"summary: {pool}")

    if len(sys.argv) == 8:
        check_png(sys.argv[5], int(sys.argv[6]), int(sys.argv[7]))
    print(f"html ok: {len(rows)} kernels, {len(waits)} waiting lines ({waited}: {hit[0][0]} ms), {pool[0]}")


main()
