#!/usr/bin/env python3
"""sass_mix.py — the instruction mix of every loop of each kernel in a cubin
(cuobjdump -sass): for each backward branch, the instructions from its
target to it, counted by class, with the loop's loads and stores and their
widths (LDG.E.128 = 4 floats), from which the elements a trip handles
follow.  NVRTC peels and unrolls: a kernel's main loop is usually the one
with the most loads.  A static count, for comparing generated code; it says
nothing of time.

    sass_mix.py CUBIN [CUOBJDUMP]    (CUOBJDUMP: default `cuobjdump` on PATH;
                                      pip's nvidia-cuda-cuobjdump ships one)
"""
import collections
import re
import subprocess
import sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
tool = sys.argv[2] if len(sys.argv) > 2 else "cuobjdump"
sass = subprocess.check_output([tool, "-sass", sys.argv[1]], text=True)
kernels = []  # (name, [(address, opcode with modifiers, operands)])
for line in sass.splitlines():
    m = re.match(r"\s+Function : (\S+)", line)
    if m:
        kernels.append((m.group(1), []))
        continue
    m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[0-9T] )?([A-Z0-9_.]+)(.*)", line)
    if m and kernels:
        kernels[-1][1].append((int(m.group(1), 16), m.group(2), m.group(3)))

for name, code in kernels:
    print(name)
    for at, op, rest in code:
        target = re.search(r"(0x[0-9a-f]+)", rest) if op == "BRA" else None
        if not target or int(target.group(1), 16) >= at:
            continue
        head = int(target.group(1), 16)
        body = [o for a, o, _ in code if head <= a <= at]
        c = collections.Counter(o.split(".")[0] for o in body)
        fp64 = sum(v for k, v in c.items() if k.startswith("D") and k != "DEPBAR")
        mem = collections.Counter(o for o in body if o.startswith(("LDG", "STG")))
        print(f"  loop {head:#06x}-{at:#06x}: {len(body)} instructions; FP64 {fp64}, MUFU {c['MUFU']}, UMOV {c['UMOV']}; "
              + ", ".join(f"{v} {k}" for k, v in sorted(mem.items())))
