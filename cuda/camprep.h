/* camprep: camera frames into a network's input, as a camera detector's
 * test-time image pipeline prepares them.
 *
 * BEVDet's pipeline (mmdet3d/datasets/pipelines/loading.py) opens a JPEG
 * with PIL, resizes the RGB image with PIL's Image.resize (bicubic by
 * default), crops it with Image.crop (pixels outside the resized image are
 * 0), and normalises each channel; camprep reproduces every step in
 * integer arithmetic, so that its output equals BEVDet's bit for bit on the
 * same RGB pixels, and both of its paths (the C reference and the CUDA
 * kernels) equal each other bit for bit on any input.
 *
 * 1. Colour.  A frame is packed RGB (any byte order, 3 or 4 bytes a pixel)
 *    or YUV 4:2:0 (planar as I420, or with interleaved chroma as NV12).  A
 *    YUV frame becomes RGB as libjpeg decodes a JPEG: its chroma is
 *    upsampled with libjpeg's "fancy" triangle filter (h2v2_fancy_upsample:
 *    3/4 of the nearer and 1/4 of the further sample on each axis, in
 *    integers, rounding +8 / +7 on even / odd columns, edges clamped), then
 *    converted with the fixed-point matrix of P3dcCamPrepYuv (libjpeg's own
 *    constants for full-range BT.601, so that the I420 planes a JPEG decoder
 *    leaves before its colour conversion become exactly the RGB that
 *    libjpeg, and PIL through it, returns).
 * 2. Resize.  PIL's Image.resize of 8-bit images (Resample.c): for each
 *    output column x of the resized width Wr, the source centre
 *    (x + 0.5) * W / Wr; the filter (bicubic a = -0.5, support 2, or
 *    bilinear, support 1) stretched by the scale when shrinking; taps from
 *    (int) (centre - support + 0.5) to (int) (centre + support + 0.5),
 *    clamped to the image; weights normalised to sum 1 in double, then
 *    rounded to 22-bit fixed point; each pass sums (1 << 21) + pixel x
 *    weight in 32-bit integers and clips (sum >> 22) to 0..255.  The
 *    horizontal pass runs first, its result stored in 8 bits, then the
 *    vertical one.
 * 3. Crop.  Output pixel (u, v) is resized pixel (u + crop_x, v + crop_y);
 *    one outside the resized image is 0 (Image.crop's padding).
 * 4. Normalise.  Output channel c of a pixel is table[c][byte] of the byte
 *    of colour channel[c] (0 red, 1 green, 2 blue): the model's
 *    normalisation evaluated once for every byte, in its own float
 *    arithmetic (p3dc_camprep_norm_init_divide(), _init_reciprocal()).
 *
 * Output: [3][out_height][out_width] per camera, F32 or F16 (the F32 value
 * rounded to nearest even), cameras one after another: the [N][C][H][W]
 * input of the image network (convnet.h).
 */
#ifndef P3DC_CAMPREP_H
#define P3DC_CAMPREP_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum
{
  /* one plane; pixel_stride bytes a pixel, red, green and blue at
   * offsets[0..2] */
  P3DC_CAMPREP_PACKED_RGB = 0,
  /* planes Y, U, V; chroma planes of (width + 1) / 2 x (height + 1) / 2 */
  P3DC_CAMPREP_YUV420_PLANAR = 1,
  /* planes Y and interleaved chroma, U at byte offsets[1] and V at
   * offsets[2] of each pair (NV12: 0, 1; NV21: 1, 0) */
  P3DC_CAMPREP_YUV420_SEMIPLANAR = 2,
} P3dcCamPrepLayout;

typedef enum
{
  P3DC_YUV_BT601 = 0,
  P3DC_YUV_BT709 = 1,
  P3DC_YUV_BT2020 = 2,
} P3dcYuvMatrix;

/* YUV to RGB in 16-bit fixed point: with y = y_scale * (Y - y_offset),
 * R = (y + cr_r (V - 128) + 2^15) >> 16, G = (y + cb_g (U - 128) + cr_g
 * (V - 128) + 2^15) >> 16, B = (y + cb_b (U - 128) + 2^15) >> 16, each
 * clipped to 0..255 (shifts are arithmetic, as libjpeg's RIGHT_SHIFT). */
typedef struct
{
  int32_t y_offset;
  int32_t y_scale;
  int32_t cr_r, cb_g, cr_g, cb_b;
} P3dcCamPrepYuv;

/* The conversion for @matrix: full range (Y 0..255, chroma 0..255 around
 * 128) or limited (Y 16..235, chroma 16..240).  Full-range BT.601 is
 * libjpeg's (the constants 1.40200, 0.34414, 0.71414, 1.77200 of its
 * jdcolor.c), the others the same form with each standard's Kr and Kb and,
 * when limited, the scales 255 / 219 and 255 / 224. */
void p3dc_camprep_yuv_init (P3dcCamPrepYuv * yuv, P3dcYuvMatrix matrix,
    int full_range);

/* PIL's resampling filters for 8-bit images. */
typedef enum
{
  P3DC_CAMPREP_BICUBIC = 0,     /* Image.resize's default */
  P3DC_CAMPREP_BILINEAR = 1,
} P3dcCamPrepFilter;

/* Largest frame side, resized side and output side. */
#define P3DC_CAMPREP_MAX_SIDE 16384u

typedef struct
{
  /* the frame */
  P3dcCamPrepLayout layout;
  uint32_t width, height;
  uint32_t pixel_stride;        /* packed RGB: 3 or 4 */
  uint32_t offsets[3];          /* see P3dcCamPrepLayout */
  P3dcCamPrepYuv yuv;           /* YUV layouts */
  /* the resize, then the crop */
  P3dcCamPrepFilter filter;
  uint32_t resize_width, resize_height;
  int32_t crop_x, crop_y;
  uint32_t out_width, out_height;
} P3dcCamPrepParams;

/* The image pipeline's last step: network value of byte p of colour
 * channel[c] is table[c][p]. */
typedef struct
{
  float table[3][256];
  uint32_t channel[3];
} P3dcCamPrepNorm;

/* torchvision's ToTensor then Normalize (BEVDet's pipeline):
 * ((float) p / divisor - mean[c]) / std[c], each step one float32
 * operation; channel[c] = c (RGB). */
void p3dc_camprep_norm_init_divide (P3dcCamPrepNorm * norm,
    const float mean[3], const float std[3], float divisor);

/* mmcv's imnormalize: ((float) p - (float) mean[c]) * (float) (1 / std[c])
 * with 1 / std[c] in double, each step one float32 operation; channel[c]
 * = c, or 2 - c when @swap_rb (its to_rgb on an image that is RGB
 * already). */
void p3dc_camprep_norm_init_reciprocal (P3dcCamPrepNorm * norm,
    const double mean[3], const double std[3], int swap_rb);

/* The tables of one camera's resize and crop, computed on the host (in
 * double, as PIL computes them) and shared by both paths. */
typedef struct _P3dcCamPrepPlan P3dcCamPrepPlan;

/* P3DC_ERROR_INVALID_ARGUMENT for a zero or too large size (above
 * P3DC_CAMPREP_MAX_SIDE), a crop offset beyond that size, an unknown
 * layout or filter, a packed pixel_stride not 3 or 4 or an offset past it,
 * semiplanar offsets not 0 and 1 in some order; P3DC_ERROR_TOO_LARGE when
 * an axis's taps (outputs x taps per output) would pass 64 Mi, a shrink of
 * thousands of times; P3DC_ERROR_OUT_OF_MEMORY. */
P3dcResult p3dc_camprep_plan_new (const P3dcCamPrepParams * params,
    P3dcCamPrepPlan ** plan);
void p3dc_camprep_plan_free (P3dcCamPrepPlan * plan);
const P3dcCamPrepParams *p3dc_camprep_plan_params (const P3dcCamPrepPlan *
    plan);

/* The frame's rows that the output reads: [*first, *first + *count). */
void p3dc_camprep_plan_rows (const P3dcCamPrepPlan * plan, uint32_t * first,
    uint32_t * count);

/* A frame's planes (packed: plane 0; planar: Y, U, V; semiplanar: Y, UV)
 * and their strides in bytes; host pointers for the reference, device
 * pointers for the CUDA path.  Only the rows that p3dc_camprep_plan_rows()
 * names (and their chroma rows, with one more above and below) are read. */
typedef struct
{
  const uint8_t *planes[3];
  int32_t strides[3];
} P3dcCamPrepFrame;

/* The reference: one camera's frame into @out, [3][out_height][out_width]
 * F32 (or F16 when @half_out). */
P3dcResult p3dc_camprep_cpu (const P3dcCamPrepPlan * plan,
    const P3dcCamPrepFrame * frame, const P3dcCamPrepNorm * norm, void *out,
    int half_out);

/* The device path for a rig: the plans of n_cameras cameras (one output
 * size for all) and the normalisation, on the current device.  Creating
 * it uploads the tables and allocates the 8-bit work image of the
 * horizontal pass; a run allocates nothing and never waits for the host. */
typedef struct _P3dcCamPrepCuda P3dcCamPrepCuda;

/* Largest rig. */
#define P3DC_CAMPREP_MAX_CAMERAS 64u

P3dcResult p3dc_camprep_cuda_new (const P3dcCamPrepPlan * const *plans,
    uint32_t n_cameras, const P3dcCamPrepNorm * norm,
    P3dcCamPrepCuda ** prep);
void p3dc_camprep_cuda_free (P3dcCamPrepCuda * prep);

/* Queues on @stream every camera's frame (@frames: n_cameras device
 * frames) into @out, [n_cameras][3][out_height][out_width] F32 (F16 when
 * @half_out) on the device; equal, bit for bit, to p3dc_camprep_cpu() of
 * each camera. */
P3dcResult p3dc_camprep_cuda_run (P3dcCamPrepCuda * prep,
    const P3dcCamPrepFrame * frames, void *out, int half_out,
    P3dcCudaStream stream);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_CAMPREP_H */
