#!/usr/bin/env python3
"""Prints the RunLoopIM frame table from IMFrameBench's `histogramSamples` export.

Usage: im_frames.py RESULTS_DIR

One row per framing; the median iteration divided by its 1,000 frames, for encoding and decoding
apart, the frames per second encoded and decoded (one frame = one encode + one decode), and
allocations per frame (mallocCountTotal, all threads).
"""
import math
import os
import re
import sys

FILE = re.compile(r"^[^.]+\.IMFrameBench\.(?P<workload>.+)#(?P<ops>\d+)\.(?P<metric>[A-Za-z]+)\.histogram\.samples\.tsv$")

ROWS = [
    ("RunLoopIM HEARTBEAT (16-byte header, no body)", "im.frame.heartbeat"),
    ("RunLoopIM SEND: header + ChatMessage (body decoded)", "im.frame.send"),
    ("protobuf delimited (varint length + ChatMessage) on [UInt8]", "im.delimited.bytes"),
    ("swift-protobuf BinaryDelimited on Foundation streams", "im.delimited.foundation"),
]


def median(values):
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) / 2)) - 1]


def load(directory):
    results = {}
    for name in os.listdir(directory):
        match = FILE.match(name)
        if not match:
            continue
        with open(os.path.join(directory, name)) as handle:
            header = next(handle, "")
            unit = re.search(r"\((K|M|G)\)\s*$", header.strip())
            scale = {"K": 1e3, "M": 1e6, "G": 1e9}[unit.group(1)] if unit and match["metric"] != "wallClock" else 1.0
            samples = [float(line) * scale for line in handle if line.strip()]
        if samples:
            results[(match["workload"], match["metric"])] = median(samples) / int(match["ops"])
    return results


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    results = load(sys.argv[1])
    print("| framing (1,000 frames per iteration, one stream) | encode ns/frame | decode ns/frame "
          "| frames/s encoded + decoded | allocations/frame encode | decode |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, prefix in ROWS:
        encode = results.get((prefix + ".encode", "wallClock"))
        decode = results.get((prefix + ".decode", "wallClock"))
        if encode is None or decode is None:
            print(f"| {label} | missing | | | | |")
            continue
        rate = 1e9 / (encode + decode)
        allocs = [results.get((prefix + side, "mallocCountTotal")) for side in (".encode", ".decode")]
        cells = ["?" if a is None else f"{a:.2f}" for a in allocs]
        print(f"| {label} | {encode:.0f} | {decode:.0f} | {rate / 1e6:.2f} M | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
