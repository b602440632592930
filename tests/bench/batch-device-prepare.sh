#!/bin/sh
# Downloads (apt-get download, on this Debian 12 machine) the Debian packages
# that p3d-batch needs on a machine without them -- the GPU machine has no
# GStreamer, no python3-gi, no Dask and no network -- into .device/debs-batch
# (.device/ is git-ignored): Python 3.11, PyGObject and the GStreamer
# typelibs, Dask distributed and the modules it imports. They add to the
# GStreamer runtime that the project's device/prepare.sh puts in .device/debs
# (run that one with EXTRA_DEBS="libjson-glib-1.0-0 liblzf1
# gstreamer1.0-plugins-good" for the plugin and multifilesink).
# tests/bench/batch-device-run.sh unpacks them there and runs the benchmark.
#
#   tests/bench/batch-device-prepare.sh        (from the repository root)
set -eu
cd "$(dirname "$0")/../.."
packages="python3.11 python3.11-minimal libpython3.11-minimal
  libpython3.11-stdlib libssl3 libexpat1 libuuid1 libsqlite3-0 libyaml-0-2
  libncursesw6 libtinfo6
  python3-gi libgirepository-1.0-1 gir1.2-glib-2.0 gir1.2-gstreamer-1.0
  gir1.2-gst-plugins-base-1.0
  python3-distributed python3-dask python3-click python3-colorama
  python3-cloudpickle python3-fsspec python3-jinja2 python3-markupsafe
  python3-locket python3-msgpack python3-packaging python3-partd
  python3-psutil python3-sortedcontainers python3-tblib python3-toolz
  python3-tornado python3-urllib3 python3-yaml python3-zict python3-heapdict
  python3-importlib-metadata python3-zipp python3-more-itertools
  python3-typing-extensions python3-six"
mkdir -p .device/debs-batch
cd .device/debs-batch
# shellcheck disable=SC2086
apt-get download $packages 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
for p in $packages; do
  if ! ls "${p}"_*.deb >/dev/null 2>&1; then
    echo "missing: $p" >&2
    exit 1
  fi
done
du -sh .
if [ ! -f ../env.sh ]; then
  echo "now run the project's device/prepare.sh (the GStreamer runtime, .device/env.sh)"
fi
