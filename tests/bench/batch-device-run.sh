#!/bin/bash
# Runs p3d-batch's scaling benchmark (tests/bench/bench_batch.py) on a
# machine without GStreamer, PyGObject or Dask (the GPU machine), with the
# Debian runtime carried in .device/: the GStreamer runtime of the project's
# device/prepare.sh (.device/debs, unpacked by .device/env.sh) and the
# packages of tests/bench/batch-device-prepare.sh (.device/debs-batch,
# unpacked here into the same root), run by the carried Python 3.11. The
# plugin is build/gst's. Arguments go to bench_batch.py; with `test` first,
# the p3d-batch tests (tests/batch/test_batch.py) run instead, on the
# elements' CUDA path where there is a GPU.
#
#   bash tests/bench/batch-device-run.sh [--files 256] [--workers 1,2,4]
#   bash tests/bench/batch-device-run.sh test [Outputs Faults Resume]
#
# P3D_DEVICE_ENV and P3D_DEVICE_ROOT name another env.sh and the root it
# unpacks into (default .device/env.sh and /tmp/gstroot), to try the recipe
# in a scratch folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
env_sh=${P3D_DEVICE_ENV:-.device/env.sh}
root=${P3D_DEVICE_ROOT:-/tmp/gstroot}
if [ ! -f "$env_sh" ] || ! ls .device/debs-batch/*.deb >/dev/null 2>&1; then
  echo "no $env_sh or .device/debs-batch: run device/prepare.sh and" \
    "tests/bench/batch-device-prepare.sh on the Debian machine first" >&2
  exit 1
fi
# cuDNN for bevdetect's CUDA path: the machine's own (its PyTorch's wheels),
# looked for with its python before the carried one comes first on PATH
cudnn=$(python3 -c 'import os, nvidia.cudnn; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null || true)
# shellcheck disable=SC1090
. "$env_sh"
for f in .device/debs-batch/*.deb; do
  dpkg -x "$f" "$root"
done
export GI_TYPELIB_PATH=$root/usr/lib/x86_64-linux-gnu/girepository-1.0
export GST_PLUGIN_PATH=$repo/build/gst
if [ -n "$cudnn" ] && [ -f "$cudnn/libcudnn.so.9" ]; then
  export LD_LIBRARY_PATH=$cudnn:$LD_LIBRARY_PATH
fi
python=$root/usr/bin/python3.11
"$python" -c 'import sys, gi, distributed
gi.require_version("Gst", "1.0"); gi.require_version("GstApp", "1.0")
from gi.repository import Gst
Gst.init(None)
print("python", sys.version.split()[0], "at", sys.executable, "; distributed", distributed.__version__, ";", Gst.version_string())
missing = [e for e in ("voxelize", "pillarencode", "bevdetect", "boxenc", "multifilesink") if Gst.ElementFactory.find(e) is None]
sys.exit("elements not found: %s" % " ".join(missing) if missing else 0)'
nvidia-smi -L 2>/dev/null || echo "no nvidia-smi: the elements take their CPU path"
export PYTHONUNBUFFERED=1
if [ "${1:-}" = test ]; then
  shift
  exec "$python" tests/batch/test_batch.py "$@"
fi
exec "$python" tests/bench/bench_batch.py "$@"
