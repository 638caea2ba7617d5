#!/usr/bin/env python3
"""sass_mix.py — the instruction mix of each kernel's first loop in a cubin
(cuobjdump -sass): the instructions from the target of the kernel's first
backward branch to that branch (the grid-stride loop's body; the vector
loop's where there is one; the compiler may have unrolled it: the loads'
widths tell how many elements a trip takes), counted by class.  A static
count, for comparing generated code; it says nothing of time.

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
kernel, ops, done = None, [], False  # ops: (address, opcode with modifiers)


def report():
    if not kernel or not ops or not done:
        return
    body = [op for at, op in ops if at >= loop_head]
    c = collections.Counter(op.split(".")[0] for op in body)
    fp64 = sum(v for k, v in c.items() if k.startswith("D") and k != "DEPBAR")
    mem = collections.Counter(op for op in body if op.startswith(("LDG", "STG")))
    print(f"{kernel}: loop of {len(body)} instructions; FP64 {fp64}, MUFU {c['MUFU']}, UMOV {c['UMOV']}; "
          + ", ".join(f"{v} {k}" for k, v in sorted(mem.items())))


for line in sass.splitlines():
    m = re.match(r"\s+Function : (\S+)", line)
    if m:
        report()
        kernel, ops, done = m.group(1), [], False
        continue
    m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[0-9T] )?([A-Z0-9_.]+)(.*)", line)
    if not m or done:
        continue
    at, op = int(m.group(1), 16), m.group(2)
    ops.append((at, op))
    target = re.search(r"(0x[0-9a-f]+)", m.group(3)) if op == "BRA" else None
    if target and int(target.group(1), 16) < at:
        done, loop_head = True, int(target.group(1), 16)
report()
