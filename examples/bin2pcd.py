#!/usr/bin/env python3
"""Writes a raw float32 x, y, z, intensity sweep (a KITTI .bin, or what
pointcloudtestsrc format=xyzi writes to a file) as a binary PCD v0.7 file.

    bin2pcd.py SWEEP.bin OUT.pcd
"""
import sys

data = open(sys.argv[1], "rb").read()
if len(data) % 16:
    sys.exit("%s: %d bytes is not a whole number of xyzi points" % (sys.argv[1], len(data)))
points = len(data) // 16
header = ("# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\n"
          "FIELDS x y z intensity\nSIZE 4 4 4 4\nTYPE F F F F\nCOUNT 1 1 1 1\n"
          "WIDTH %d\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS %d\nDATA binary\n"
          % (points, points))
with open(sys.argv[2], "wb") as out:
    out.write(header.encode("ascii"))
    out.write(data)
