// The one place the compute library uses CUB's single-pass scan machinery:
// cub::ScanTileState (the per-tile status words of a decoupled look-back
// scan) and cub::TilePrefixCallbackOp (the look-back itself, as a prefix
// callback of cub::BlockScan).  voxelize's scan kernel needs them because it
// is a scan fused with its own work (numbering voxels and scattering points
// in one pass), which CUB's device-wide scans cannot express.
//
// These are CUB internals, not documented API: their names, members and
// semantics may change between CCCL releases without notice.  Checked
// against CCCL 3.0.1 (CCCL_VERSION 3000001, CUB_VERSION 300001), as shipped
// with CUDA 13.0.  What the code relies on, to re-check with a new CCCL:
//   - P3dcScanTileState<T>::AllocationSize (tiles, bytes) and
//     Init (tiles, storage, bytes) on the host, returning cudaError_t;
//   - InitializeStatus (tiles) called by at least one thread per tile of a
//     grid that ends before the scan starts, which makes every tile
//     "invalid" (not yet published);
//   - SetInclusive (0, aggregate) by the first tile's thread 0;
//   - P3dcTilePrefix<T, Op> (tile_state, temp_storage, op, tile) as the
//     prefix callback of BlockScan::ExclusiveScan for tiles 1 and on, with
//     its TempStorage in shared memory; it spins on lower tiles only.
// The voxelize CUDA tests (tests/check/libs/voxelize_cuda.c) compare the
// whole output with the reference bit for bit, so a change of behaviour
// shows there.
#ifndef P3DC_SINGLE_PASS_SCAN_CUH
#define P3DC_SINGLE_PASS_SCAN_CUH

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/version.cuh>

#if CUB_VERSION < 200000
#error "single_pass_scan.cuh was checked against CCCL 3.0; CUB 1.x differs"
#endif

template <typename T>
using P3dcScanTileState = cub::ScanTileState<T>;

template <typename T, typename ScanOp>
using P3dcTilePrefix =
    cub::TilePrefixCallbackOp<T, ScanOp, cub::ScanTileState<T>>;

#endif  // P3DC_SINGLE_PASS_SCAN_CUH
