#!/usr/bin/env python3
"""Ribbon filters' memory and accuracy on the server (issue #33's size and accuracy table).

For each n and ε: stages n items (`%012d` of 0 … n−1) into a fresh key by pipelined `RF.MADD`
batches (bench/ribbon.py's `stage`), builds it with `RF.BUILD key ERROR ε`, and reports
`MEMORY USAGE` × 8 / n (bits per item) against log2(1/ε) and the issue's 1.07 × log2(1/ε) bound,
how many of the n items `RF.MEXISTS` answers 0 (false negatives: must be 0), and the
false-positive rate on P never-staged items (`%012d` of 10^11 … 10^11 + P − 1), asked by
`RF.MEXISTS` in batches of 1000.

Standard library only. Usage: ribbon_sizes.py --module SO [--server redis-server]
    [--items 100000,10000000] [--errors 0.01,0.001,0.0001] [--probes 10000000]
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Conn  # noqa: E402
from ribbon import batched, stage  # noqa: E402
from stall import Server  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", required=True)
    ap.add_argument("--server", default="redis-server")
    ap.add_argument("--items", default="100000,10000000")
    ap.add_argument("--errors", default="0.01,0.001,0.0001")
    ap.add_argument("--probes", type=int, default=10_000_000)
    a = ap.parse_args()
    s = Server(a.server, os.path.abspath(a.module))
    try:
        con = Conn(s.port)
        print("| n | ε | MEMORY USAGE, bytes | bits per item | log2(1/ε) | ratio (≤ 1.07) "
              "| false negatives | false positives / probes | measured FP |")
        print("|---|---|---|---|---|---|---|---|---|")
        for n in [int(float(x)) for x in a.items.split(",")]:
            for eps in [float(x) for x in a.errors.split(",")]:
                key = b"rf:%d:%g" % (n, eps)
                stage(s.port, b"RF.MADD", key, n)
                assert con.call("RF.BUILD", key, "ERROR", eps) == "OK"
                usage = con.call("MEMORY", "USAGE", key)
                bits = usage * 8 / n
                minimum = math.log2(1 / eps)
                missing = n - batched(s.port, b"RF.MEXISTS", key, 0, n)[1]
                fp = batched(s.port, b"RF.MEXISTS", key, 10**11, a.probes)[1]
                print("| %d | %g | %d | %.3f | %.3f | %.4f | %d | %d / %d | %.6f |"
                      % (n, eps, usage, bits, minimum, bits / minimum, missing, fp, a.probes,
                         fp / a.probes), flush=True)
                con.call("DEL", key)
        con.close()
    finally:
        s.stop()


if __name__ == "__main__":
    main()
