#!/usr/bin/env python3
"""Runs tests/reference/bevdet_torch.py's self-test (hand-worked cases of
the preprocessing, the pooling, Scale-NMS and the converter round trip)
where torch, torchvision, numpy and PIL are installed; exits 77 (skipped)
where they are not."""

import os
import subprocess
import sys

try:
    import numpy  # noqa: F401
    import PIL  # noqa: F401
    import torch  # noqa: F401
    import torchvision  # noqa: F401
except ImportError as error:
    print("skipped: %s" % error)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(HERE, "..", "reference", "bevdet_torch.py")
sys.exit(subprocess.run([sys.executable, script, "self-test"]).returncode)
