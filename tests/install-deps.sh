#!/bin/sh
# Installs the Debian packages that the build, the tests and the demo need,
# when they are missing. Used by tests/run.sh and examples/demo.sh. The CUDA
# toolkit is not a Debian package: when /usr/local/cuda holds one, the build
# uses it, otherwise every element builds with its C reference path only.
set -eu
packages="meson ninja-build pkg-config gcc libglib2.0-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-tools
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
  libjson-glib-dev libyaml-dev liblzf-dev libjpeg-dev python3 python3-gi
  python3-yaml gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
  python3-distributed valgrind indent clang-format"
missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo=sudo
  fi
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
