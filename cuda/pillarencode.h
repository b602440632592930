/* Pillar encoding: the learned pillar feature net of PointPillars and
 * CenterPoint-pillar (mmdetection3d's PFNLayer, one layer, mode max) and the
 * scatter of each pillar's vector onto the BEV canvas (PointPillarsScatter):
 * application/x-pillar-features in, application/x-bev-features out.
 *
 * For every pillar v below the count (clamped to max_voxels), every point
 * slot s of its max_points slots (padded slots are zero rows and take part,
 * exactly as in the PyTorch model) and every output channel c:
 *   y[s][c] = ReLU (bias[c] + sum_i weight[c][i] * x[v][s][i])
 *   pillar[c] = max over all s of y[s][c]
 * with weight [out][in] and bias [out] the linear layer with its BatchNorm
 * folded in.  Arithmetic is float32 on both paths, in one order: acc = 0,
 * then acc = fmaf (weight[c][i], x[i], acc) for i = 0 .. in - 1, then
 * acc + bias[c]; ReLU is (v > 0 ? v : +0), so a NaN input gives 0 where
 * PyTorch would give NaN (pillarfeat never produces one from the finite
 * points voxelize keeps).  F16 features are widened to float exactly; an F16
 * canvas holds the float result rounded to nearest, ties to even.  The CUDA
 * path therefore returns the reference's canvas bit for bit.
 *
 * The pillar's vector goes to canvas[c][y][x] with x = coords[v][3],
 * y = coords[v][2] (coords[v][0] and [1], batch and z, are not read); every
 * other cell is 0.  Bad input is dropped, never written out of bounds: a
 * pillar whose x or y is outside the grid is skipped and counted in
 * *dropped.  Two pillars in one cell (voxelize never makes them) are defined:
 * the later pillar (higher index) wins, as a sequential loop leaves it.
 */
#ifndef P3DC_PILLARENCODE_H
#define P3DC_PILLARENCODE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "hostdevice.h"
#include "result.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits that p3dc_pillarencode_params_validate() enforces: one pillar's
 * features must fit the kernel's shared memory and a row of them its
 * registers, indices fit 32 bits.  A pillar's values count its rows as the
 * kernel pads them: in rounded up to 4, 8, 12, 16, 24, 32, 48 or 64. */
#define P3DC_PILLARENCODE_MAX_IN_CHANNELS 64u
#define P3DC_PILLARENCODE_MAX_WEIGHTS 4096u      /* out * (in + 1) */
#define P3DC_PILLARENCODE_MAX_PILLAR_VALUES 4096u        /* max_points * padded in */
#define P3DC_PILLARENCODE_MAX_VOXELS 0x7fffffffu
#define P3DC_PILLARENCODE_MAX_CELLS 0x7fffffffu  /* grid_x * grid_y */

typedef struct
{
  /* features per point (11 for mmdet3d-11) and channels of the canvas */
  uint32_t in_channels, out_channels;
  /* the x-pillar-features shape */
  uint32_t max_points, max_voxels;
  /* canvas width (x cells) and height (y cells) */
  uint32_t grid_x, grid_y;
  /* nonzero: F16 features in / F16 canvas out; zero: F32 */
  int half_in, half_out;
} P3dcPillarEncodeParams;

/* P3DC_ERROR_INVALID_ARGUMENT for a NULL pointer or a zero size,
 * P3DC_ERROR_TOO_LARGE beyond the limits above. */
P3dcResult p3dc_pillarencode_params_validate (const P3dcPillarEncodeParams *
    params);

/* Bytes of the canvas, out * grid_y * grid_x * (2 or 4); 0 when @params is
 * not valid. */
size_t p3dc_pillarencode_canvas_size (const P3dcPillarEncodeParams * params);

/* Bytes of the features tensor, max_voxels * max_points * in * (2 or 4); 0
 * when @params is not valid. */
size_t p3dc_pillarencode_features_size (const P3dcPillarEncodeParams * params);

/* The x-pillar-features tensors: features [max_voxels][max_points][in] F32
 * or F16, coords [max_voxels][4] int32 (batch, z, y, x), count [1] uint32
 * (device pointers for the CUDA path). */
typedef struct
{
  const void *features;
  const int32_t *coords;
  const uint32_t *count;
} P3dcPillarEncodeInput;

/* The reference.  @weight [out][in] and @bias [out] are host float32.
 * Writes every byte of @canvas, and the number of pillars dropped for
 * coordinates outside the grid to *dropped when @dropped is not NULL.
 * P3DC_ERROR_INVALID_ARGUMENT (nothing written) for invalid params or a NULL
 * pointer other than @dropped. */
P3dcResult p3dc_pillarencode_cpu (const P3dcPillarEncodeParams * params,
    const float *weight, const float *bias, const P3dcPillarEncodeInput * in,
    void *canvas, uint32_t * dropped);

/* The device path: a workspace made once per params and weights (the weights
 * are copied to the device then, on the current device) and used for every
 * frame with no allocation and no host synchronization.  It holds a cell
 * map (8 bytes a cell) and a row of out values in the canvas type per
 * possible pillar (max_voxels rows): creation fails with the CUDA
 * runtime's out-of-memory error where those do not fit on the device. */
typedef struct _P3dPillarEncoder P3dcPillarEncoder;

P3dcResult p3dc_pillarencoder_new (const P3dcPillarEncodeParams * params,
    const float *weight, const float *bias, P3dcPillarEncoder ** encoder);
void p3dc_pillarencoder_free (P3dcPillarEncoder * encoder);

/* Queued on @stream: the canvas (device, 16-byte aligned) fully written,
 * the count read on the device, *dropped (a device word, may be NULL)
 * written with the frame's drop count.  A workspace serves one stream at a
 * time.  Three kernels: one claims each pillar's cell in the cell map (an
 * atomic max of (frame, pillar), so the later pillar wins and no clearing
 * pass is needed between frames), one computes the net for each pillar (a
 * warp per two pillars, a lane per one or two output channels with their
 * weights in registers) into its workspace row, and one walks the
 * canvas in tiles of cells, gathers the tile's rows in shared memory and
 * writes every channel of every cell from there, zeros of empty cells, with
 * coalesced stores. */
P3dcResult p3dc_pillarencode_cuda (P3dcPillarEncoder * encoder,
    const P3dcPillarEncodeInput * in, void *canvas, uint32_t * dropped,
    P3dcCudaStream stream);

/* The arithmetic both paths share: ReLU of one slot's output channel, from
 * the channel's weight row, the slot's features (already float) and the
 * bias. */
static P3DC_HOST_DEVICE float
p3dc_pillarencode_slot (const float *weight_row, const float *x,
    uint32_t in_channels, float bias)
{
  float acc = 0.0f;
  uint32_t i;

  for (i = 0; i < in_channels; i++)
    acc = fmaf (weight_row[i], x[i], acc);
  acc = acc + bias;
  return acc > 0.0f ? acc : 0.0f;
}

#ifdef __cplusplus
}
#endif

#endif /* P3DC_PILLARENCODE_H */
