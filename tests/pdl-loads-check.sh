#!/bin/sh
# Looks, in the SASS of a built library, for read-only loads (LDG ...
# CONSTANT) placed before the wait of a programmatic dependent kernel
# (ACQBULK, cudaGridDependencySynchronize): such a load may read what the
# kernel before it has not written yet (cuda/launch.cuh says why, and how the
# kernels avoid them).  Needs cuobjdump (the GPU machine's CUDA toolkit has
# it); exits 1 and names the kernels when it finds one.
#
#   tests/pdl-loads-check.sh build/cuda/libp3dcompute-1.0.so
set -eu
lib=${1:?usage: tests/pdl-loads-check.sh LIBRARY}
cuobjdump=${CUOBJDUMP:-cuobjdump}
command -v "$cuobjdump" > /dev/null || cuobjdump=/usr/local/cuda/bin/cuobjdump
"$cuobjdump" -sass "$lib" | awk '
  /Function :/ { name = $3; waited = 0; early = 0; next }
  /ACQBULK/ { if (!waited) kernels++
              if (early) { print name ": " early " read-only loads before the wait"; bad = 1 }
              waited = 1; early = 0; next }
  /LDG[.A-Z0-9]*CONSTANT/ { if (!waited) early++ }
  END { print kernels + 0 " kernels wait for the one before them; " \
          (bad ? "some read before the wait" : "none reads before the wait")
        exit bad }'
