#!/usr/bin/env python3
"""Where the decode kernel's start and end code sits in its SASS (cuobjdump -sass of a cubin that
`ktune compile gemm_decode --arch sm_90a -D ...` put in its cache): per file, the code's bytes, the
offsets (bytes from the entry) of the first and last instruction of each marker opcode (the block
barrier, mbarrier inits and waits, the TMA tensor-map prefetch and box loads, the cluster barriers,
wgmma, st.async, global stores, calls, exits), the bytes laid out before the first box load and
after the last wgmma, and the instructions of the entry's straight line up to the first branch.
   python3 dev/decode/sass_paths.py FILE.sass...     (static offsets: a block runs one role's path)"""
import re
import sys

INS = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
MARKERS = ["BAR.SYNC", "SYNCS.EXCH", "SYNCS.ARRIVE", "SYNCS.PHASECHK", "UTMAPF", "UTMALDG", "UCGABAR_ARV",
           "UCGABAR_WAIT", "HGMMA", "WARPGROUP.DEPBAR", "STAS", "STG", "ST.E", "CALL", "BRA", "EXIT", "CCTL",
           "ELECT", "UTMACCTL", "MEMBAR", "FENCE", "ACQBULK", "S2UR", "CS2R", "LDC"]


def parse(path):
    """[(offset, opcode, operands)] of the file's kernel (the first function listed)."""
    out = []
    for line in open(path, errors="replace"):
        m = INS.search(line)
        if m:
            out.append((int(m.group(1), 16), m.group(3), m.group(4).strip()))
    return out


def report(path):
    ins = parse(path)
    if not ins:
        print(f"{path}: no instructions")
        return
    end = ins[-1][0] + 16
    print(f"== {path}: {end} bytes, {len(ins)} instructions")
    for mk in MARKERS:
        at = [o for o, op, _ in ins if op == mk or op.startswith(mk + ".")]
        if at:
            print(f"  {mk:18s} first {at[0]:6d}  last {at[-1]:6d}  count {len(at)}")
    tma = [o for o, op, _ in ins if op.startswith("UTMALDG")]
    mma = [o for o, op, _ in ins if op.startswith("HGMMA")]
    if tma:
        print(f"  before the first box load: {tma[0]} bytes")
    if mma:
        print(f"  after the last wgmma: {end - mma[-1]} bytes")
    print("  entry's straight line:", " ".join(op for o, op, _ in ins[:48]))


for f in sys.argv[1:]:
    report(f)
