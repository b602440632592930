/* The camprep reference (camera frames into a network's input) against
 * independent expectations: PIL's own Image.resize and Image.crop outputs
 * (computed with Pillow 9.4 and written below), libjpeg's decode of JPEGs
 * the test encodes (the YUV path must give libjpeg's RGB exactly), a
 * float64 resize with unrounded weights (within one level), cases worked
 * by hand, the normalisations in float64, refused parameters; and the
 * camfeatures pack against direct indexing. */
#include <math.h>
#include <string.h>

#include "half.h"
#include "p3dtest-camprep.h"

#ifdef HAVE_LIBJPEG
#include <stdio.h>
#include <jpeglib.h>
#endif

/* The test image of the PIL fixtures: the same formula in Python made
 * them. */
static guint8
fixture_pixel (guint x, guint y, guint c)
{
  return (guint8) ((x * 37 + y * 91 + c * 53 + ((x * y) % 13) * 17) & 255);
}

/* Produced by Pillow 9.4.0: Image.fromarray (image).resize ((rw, rh),
 * filter).crop (box), of the fixture_pixel() image. */
/* downscale: 23x17 -> resize 10x8 (bicubic), crop (1, 2, 9, 7) */
static const guint8 pil_downscale[120] = {
  133, 134, 112, 121, 111, 114, 127, 111, 158, 159, 118, 161, 104, 158, 126,
  100, 154, 104, 97, 148, 130, 133, 137, 140, 125, 88, 139, 125, 123, 127,
  135, 99, 136, 124, 131, 151, 138, 127, 97, 140, 140, 132, 115, 151, 110,
  78, 142, 151, 121, 118, 116, 104, 102, 137, 190, 57, 71, 133, 183, 115,
  105, 124, 160, 128, 126, 117, 113, 133, 146, 118, 84, 93, 133, 76, 133,
  165, 87, 104, 200, 181, 34, 200, 167, 57, 139, 179, 117, 105, 163, 90, 116,
  156, 100, 168, 185, 99, 111, 107, 122, 94, 139, 159, 176, 192, 73, 127, 63,
  114, 102, 115, 172, 119, 147, 112, 121, 121, 128, 100, 131, 183
};

/* upscale_padded: 9x7 -> resize 20x15 (bicubic), crop (-2, -1, 10, 8) */
static const guint8 pil_upscale_padded[324] = {
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 42, 95, 0, 48, 101,
  12, 65, 116, 30, 83, 137, 45, 97, 164, 61, 114, 191, 77, 140, 209, 92, 168,
  223, 116, 188, 249, 145, 203, 255, 0, 0, 0, 0, 0, 0, 11, 61, 118, 16, 69,
  126, 34, 89, 146, 54, 111, 162, 73, 131, 159, 93, 146, 159, 113, 147, 173,
  129, 144, 193, 134, 156, 220, 130, 179, 240, 0, 0, 0, 0, 0, 0, 52, 102,
  175, 60, 116, 187, 80, 146, 219, 107, 179, 221, 137, 212, 149, 167, 222,
  83, 199, 163, 88, 216, 86, 122, 175, 83, 153, 93, 125, 184, 0, 0, 0, 0, 0,
  0, 100, 155, 181, 112, 161, 195, 138, 174, 234, 164, 193, 235, 177, 233,
  142, 192, 247, 57, 228, 172, 63, 252, 73, 104, 199, 51, 122, 94, 76, 133,
  0, 0, 0, 0, 0, 0, 158, 227, 86, 173, 203, 100, 212, 141, 134, 225, 102,
  156, 166, 132, 142, 115, 167, 130, 142, 167, 160, 190, 149, 194, 194, 104,
  164, 170, 41, 96, 0, 0, 0, 0, 0, 0, 171, 248, 23, 189, 208, 39, 235, 113,
  72, 244, 47, 108, 154, 73, 139, 71, 120, 170, 77, 164, 215, 120, 194, 247,
  165, 143, 196, 210, 39, 92, 0, 0, 0, 0, 0, 0, 84, 148, 57, 102, 140, 79,
  144, 117, 131, 173, 112, 163, 163, 154, 130, 138, 189, 101, 98, 172, 140,
  62, 137, 193, 88, 116, 192, 152, 100, 158, 0, 0, 0, 0, 0, 0, 9, 62, 115,
  27, 80, 136, 66, 119, 190, 112, 165, 206, 168, 221, 121, 194, 247, 44, 126,
  179, 62, 36, 89, 118, 33, 96, 167, 86, 156, 214
};

/* bilinear: 23x17 -> resize 7x11 (bilinear), crop (0, 0, 7, 11) */
static const guint8 pil_bilinear[231] = {
  95, 133, 160, 144, 148, 138, 90, 96, 126, 143, 157, 102, 109, 109, 123,
  126, 150, 121, 125, 106, 103, 156, 145, 137, 128, 115, 135, 112, 134, 116,
  141, 127, 103, 136, 118, 110, 140, 127, 119, 153, 113, 111, 118, 130, 130,
  117, 130, 119, 157, 127, 124, 136, 139, 134, 137, 140, 117, 131, 104, 141,
  145, 92, 140, 133, 151, 110, 130, 113, 120, 126, 106, 149, 132, 138, 145,
  99, 152, 104, 109, 151, 125, 144, 118, 134, 116, 119, 125, 123, 110, 142,
  138, 114, 148, 131, 137, 127, 121, 142, 131, 91, 144, 133, 122, 171, 137,
  131, 100, 145, 122, 110, 115, 137, 103, 110, 125, 121, 122, 144, 131, 118,
  115, 139, 133, 112, 152, 119, 136, 114, 146, 108, 105, 137, 185, 90, 77,
  120, 163, 151, 103, 124, 138, 112, 100, 124, 167, 166, 95, 154, 109, 114,
  165, 71, 100, 192, 168, 48, 177, 189, 79, 125, 178, 85, 148, 180, 84, 163,
  207, 52, 123, 137, 113, 103, 140, 157, 170, 165, 75, 121, 90, 132, 108,
  138, 121, 100, 126, 165, 150, 172, 120, 138, 124, 109, 119, 113, 119, 147,
  141, 109, 116, 107, 152, 116, 130, 137, 131, 127, 116, 138, 148, 153, 112,
  140, 101, 131, 135, 136, 134, 131, 150, 122, 138, 142, 134, 126, 132, 142,
  138, 106, 142, 122, 147
};

/* crop_only: 40x30 -> resize 40x30 (bicubic), crop (5, 6, 15, 12) */
static const guint8 pil_crop_only[180] = {
  31, 84, 137, 170, 223, 20, 88, 141, 194, 227, 24, 77, 145, 198, 251, 28,
  81, 134, 202, 255, 52, 85, 138, 191, 3, 56, 109, 142, 195, 248, 207, 4, 57,
  142, 195, 248, 42, 95, 148, 233, 30, 83, 133, 186, 239, 68, 121, 174, 224,
  21, 74, 159, 212, 9, 94, 147, 200, 250, 47, 100, 162, 215, 12, 79, 132,
  185, 31, 84, 137, 204, 1, 54, 156, 209, 6, 108, 161, 214, 25, 78, 131, 233,
  30, 83, 185, 238, 35, 102, 155, 208, 82, 135, 188, 51, 104, 157, 241, 38,
  91, 210, 7, 60, 179, 232, 29, 113, 166, 219, 82, 135, 188, 51, 104, 157,
  20, 73, 126, 210, 7, 60, 2, 55, 108, 244, 41, 94, 230, 27, 80, 216, 13, 66,
  167, 220, 17, 153, 206, 3, 139, 192, 245, 125, 178, 231, 111, 164, 217, 62,
  115, 168, 213, 10, 63, 216, 13, 66, 184, 237, 34, 187, 240, 37, 190, 243,
  40, 193, 246, 43, 196, 249, 46, 199, 252, 49, 202, 255, 52, 170, 223, 20
};

/* bottom_padded: 31x29 -> resize 12x30 (bicubic), crop (2, 20, 12, 34) */
static const guint8 pil_bottom_padded[420] = {
  138, 144, 126, 131, 142, 160, 163, 132, 128, 141, 149, 81, 170, 148, 109,
  119, 115, 93, 88, 123, 122, 127, 123, 109, 109, 112, 141, 140, 98, 110,
  129, 153, 137, 119, 139, 146, 129, 120, 162, 146, 117, 108, 158, 131, 121,
  90, 133, 106, 99, 145, 115, 112, 141, 124, 137, 93, 142, 143, 120, 160,
  176, 111, 116, 84, 142, 158, 127, 152, 118, 98, 107, 149, 114, 102, 174,
  144, 99, 80, 103, 109, 127, 162, 126, 91, 137, 129, 133, 102, 132, 133,
  186, 89, 133, 86, 150, 209, 150, 48, 85, 138, 149, 126, 148, 90, 118, 173,
  146, 112, 89, 117, 177, 191, 80, 76, 123, 172, 166, 100, 79, 106, 144, 197,
  183, 93, 147, 207, 29, 103, 160, 125, 39, 101, 181, 185, 72, 112, 178, 217,
  53, 116, 172, 82, 58, 126, 204, 141, 62, 145, 216, 103, 99, 155, 212, 92,
  144, 198, 111, 165, 197, 97, 158, 180, 87, 123, 181, 70, 122, 177, 60, 113,
  166, 74, 133, 185, 60, 121, 155, 57, 99, 142, 46, 102, 157, 108, 163, 219,
  166, 206, 70, 189, 240, 36, 204, 81, 76, 46, 65, 122, 72, 129, 185, 133,
  181, 216, 155, 212, 37, 191, 162, 47, 113, 68, 128, 115, 181, 186, 202, 79,
  73, 81, 104, 175, 152, 182, 155, 186, 65, 88, 85, 147, 200, 172, 149, 102,
  53, 69, 128, 113, 168, 224, 143, 100, 83, 103, 152, 163, 152, 115, 109,
  150, 148, 112, 99, 102, 148, 173, 168, 131, 117, 121, 127, 118, 80, 70,
  124, 171, 178, 176, 121, 111, 78, 138, 103, 117, 125, 84, 125, 89, 128,
  106, 90, 136, 157, 141, 98, 139, 101, 164, 127, 136, 148, 85, 149, 112,
  169, 136, 109, 150, 105, 165, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0
};

typedef struct
{
  const gchar *name;
  guint width, height, resize_width, resize_height;
  gint box[4];                  /* x0, y0, x1, y1 */
  P3dcCamPrepFilter filter;
  const guint8 *expected;
} PilCase;

static const PilCase pil_cases[] = {
  {"downscale", 23, 17, 10, 8, {1, 2, 9, 7}, P3DC_CAMPREP_BICUBIC,
      pil_downscale},
  {"upscale_padded", 9, 7, 20, 15, {-2, -1, 10, 8}, P3DC_CAMPREP_BICUBIC,
      pil_upscale_padded},
  {"bilinear", 23, 17, 7, 11, {0, 0, 7, 11}, P3DC_CAMPREP_BILINEAR,
      pil_bilinear},
  {"crop_only", 40, 30, 40, 30, {5, 6, 15, 12}, P3DC_CAMPREP_BICUBIC,
      pil_crop_only},
  {"bottom_padded", 31, 29, 12, 30, {2, 20, 12, 34}, P3DC_CAMPREP_BICUBIC,
      pil_bottom_padded},
};

/* The normalisation that keeps the byte: table[c][p] = p. */
static void
identity_norm (P3dcCamPrepNorm * norm)
{
  guint c, p;

  for (c = 0; c < 3; c++) {
    norm->channel[c] = c;
    for (p = 0; p < 256; p++)
      norm->table[c][p] = (gfloat) p;
  }
}

/* Runs the reference on @frame with @params' geometry and the identity
 * normalisation; the output as bytes [3][h][w]. */
static guint8 *
run_bytes (const P3dcCamPrepParams * params, const P3dcCamPrepFrame * frame)
{
  gsize n = (gsize) 3 * params->out_width * params->out_height, i;
  gfloat *out = g_new (gfloat, n);
  guint8 *bytes = g_new (guint8, n);
  P3dcCamPrepPlan *plan = NULL;
  P3dcCamPrepNorm norm;

  identity_norm (&norm);
  fail_unless_equals_int (p3dc_camprep_plan_new (params, &plan), P3DC_OK);
  fail_unless_equals_int (p3dc_camprep_cpu (plan, frame, &norm, out, FALSE),
      P3DC_OK);
  for (i = 0; i < n; i++) {
    fail_unless (out[i] == floorf (out[i]) && out[i] >= 0 && out[i] <= 255);
    bytes[i] = (guint8) out[i];
  }
  p3dc_camprep_plan_free (plan);
  g_free (out);
  return bytes;
}

/* Writes the fixture image in @format (packed RGB layouts only). */
static void
fixture_frame (CamprepTestFrame * frame, const CamprepTestFormat * format,
    guint width, guint height, P3dTestRng * rng)
{
  guint x, y, c;

  camprep_test_frame_init (frame, format, width, height, 3, rng);
  for (y = 0; y < height; y++)
    for (x = 0; x < width; x++)
      for (c = 0; c < 3; c++)
        frame->planes[0][y * frame->strides[0] + x * format->pixel_stride +
            format->offsets[c]] = fixture_pixel (x, y, c);
}

GST_START_TEST (test_pil_fixtures)
{
  P3dTestRng rng;
  guint i, f, x, y, c;

  p3d_test_rng_init (&rng, 1);
  for (i = 0; i < G_N_ELEMENTS (pil_cases); i++) {
    const PilCase *pc = &pil_cases[i];

    /* the same image in each packed byte order gives PIL's bytes */
    for (f = 0; f < camprep_test_n_formats; f++) {
      const CamprepTestFormat *format = &camprep_test_formats[f];
      CamprepTestFrame frame;
      P3dcCamPrepFrame view;
      P3dcCamPrepParams params;
      guint8 *out;

      if (format->layout != P3DC_CAMPREP_PACKED_RGB)
        continue;
      fixture_frame (&frame, format, pc->width, pc->height, &rng);
      camprep_test_frame_view (&frame, &view);
      params = frame.params;
      params.filter = pc->filter;
      params.resize_width = pc->resize_width;
      params.resize_height = pc->resize_height;
      params.crop_x = pc->box[0];
      params.crop_y = pc->box[1];
      params.out_width = pc->box[2] - pc->box[0];
      params.out_height = pc->box[3] - pc->box[1];
      out = run_bytes (&params, &view);
      for (y = 0; y < params.out_height; y++)
        for (x = 0; x < params.out_width; x++)
          for (c = 0; c < 3; c++) {
            guint got = out[(c * params.out_height + y) * params.out_width + x];
            guint want = pc->expected[(y * params.out_width + x) * 3 + c];

            fail_unless (got == want, "%s, %s: pixel (%u, %u) channel %u is "
                "%u, PIL gives %u", pc->name, format->name, x, y, c, got, want);
          }
      g_free (out);
      camprep_test_frame_clear (&frame);
    }
  }
}

GST_END_TEST;

/* 4 x 1 pixels 10, 20, 30, 40 halved with the bilinear filter: PIL
 * stretches the triangle to support 2, so output 0 has taps at x = 0, 1, 2
 * with weights 0.75, 0.75, 0.25 (normalised 3/7, 3/7, 1/7): 120 / 7 = 17.1
 * gives 17; output 1 taps x = 1, 2, 3 with 1/7, 3/7, 3/7: 230 / 7 = 32.9
 * gives 33. */
GST_START_TEST (test_hand_worked)
{
  const guint8 row[12] = { 10, 10, 10, 20, 20, 20, 30, 30, 30, 40, 40, 40 };
  P3dcCamPrepParams params = { 0, };
  P3dcCamPrepFrame frame = { {row}, {12} };
  guint8 *out;
  guint c;

  params.layout = P3DC_CAMPREP_PACKED_RGB;
  params.pixel_stride = 3;
  params.offsets[0] = 0;
  params.offsets[1] = 1;
  params.offsets[2] = 2;
  params.width = 4;
  params.height = 1;
  params.filter = P3DC_CAMPREP_BILINEAR;
  params.resize_width = 2;
  params.resize_height = 1;
  params.out_width = 2;
  params.out_height = 1;
  out = run_bytes (&params, &frame);
  for (c = 0; c < 3; c++) {
    fail_unless_equals_int (out[c * 2], 17);
    fail_unless_equals_int (out[c * 2 + 1], 33);
  }
  g_free (out);

  /* cropped one to the right: output 0 is resized pixel 1 (33), output 1
   * lies past the resized image (0, Image.crop's padding) */
  params.crop_x = 1;
  out = run_bytes (&params, &frame);
  for (c = 0; c < 3; c++) {
    fail_unless_equals_int (out[c * 2], 33);
    fail_unless_equals_int (out[c * 2 + 1], 0);
  }
  g_free (out);
}

GST_END_TEST;

/* A constant image stays constant under any resize (the rounded weights of
 * an output sum to 1 within far less than half a level); crops past the
 * resized image are 0; an identity resize with a crop is a shift. */
GST_START_TEST (test_constant_and_shift)
{
  P3dTestRng rng;
  guint round, x, y, c;

  p3d_test_rng_init (&rng, 2);
  for (round = 0; round < 40; round++) {
    CamprepTestFrame frame;
    P3dcCamPrepFrame view;
    P3dcCamPrepParams params;
    guint8 colour[3];
    guint8 *out;

    camprep_test_frame_init (&frame, &camprep_test_formats[0],
        1 + p3d_test_rng_below (&rng, 60), 1 + p3d_test_rng_below (&rng, 40),
        p3d_test_rng_below (&rng, 8), &rng);
    for (c = 0; c < 3; c++)
      colour[c] = (guint8) p3d_test_rng_u32 (&rng);
    for (y = 0; y < frame.params.height; y++)
      for (x = 0; x < frame.params.width; x++)
        memcpy (frame.planes[0] + y * frame.strides[0] + x * 3, colour, 3);
    camprep_test_frame_view (&frame, &view);
    params = frame.params;
    camprep_test_random_geometry (&params, &rng,
        1 + p3d_test_rng_below (&rng, 30), 1 + p3d_test_rng_below (&rng, 30));
    out = run_bytes (&params, &view);
    for (c = 0; c < 3; c++)
      for (y = 0; y < params.out_height; y++)
        for (x = 0; x < params.out_width; x++) {
          gint rx = (gint) x + params.crop_x, ry = (gint) y + params.crop_y;
          gboolean inside = rx >= 0 && ry >= 0
              && rx < (gint) params.resize_width
              && ry < (gint) params.resize_height;

          fail_unless_equals_int (out[(c * params.out_height + y) *
                  params.out_width + x], inside ? colour[c] : 0);
        }
    g_free (out);

    /* the identity resize of random bytes, cropped */
    for (y = 0; y < frame.params.height; y++)
      for (x = 0; x < frame.params.width * 3; x++)
        frame.planes[0][y * frame.strides[0] + x] =
            (guint8) p3d_test_rng_u32 (&rng);
    params = frame.params;
    params.crop_x = (gint) p3d_test_rng_below (&rng, params.width);
    params.crop_y = (gint) p3d_test_rng_below (&rng, params.height);
    params.out_width = 1 + p3d_test_rng_below (&rng, params.width);
    params.out_height = 1 + p3d_test_rng_below (&rng, params.height);
    out = run_bytes (&params, &view);
    for (c = 0; c < 3; c++)
      for (y = 0; y < params.out_height; y++)
        for (x = 0; x < params.out_width; x++) {
          guint sx = x + params.crop_x, sy = y + params.crop_y;
          guint want = sx < params.width && sy < params.height ?
              frame.planes[0][sy * frame.strides[0] + sx * 3 + c] : 0;

          fail_unless_equals_int (out[(c * params.out_height + y) *
                  params.out_width + x], want);
        }
    g_free (out);
    camprep_test_frame_clear (&frame);
  }
}

GST_END_TEST;

/* The oracle's filter, written from PIL's definitions. */
static gdouble
oracle_filter (P3dcCamPrepFilter filter, gdouble x)
{
  x = fabs (x);
  if (filter == P3DC_CAMPREP_BILINEAR)
    return x < 1.0 ? 1.0 - x : 0.0;
  if (x < 1.0)
    return (1.5 * x - 2.5) * x * x + 1.0;
  if (x < 2.0)
    return ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0;
  return 0.0;
}

/* One resized value along an axis in float64: the filter's taps over
 * @in_size samples read through @sample, weights normalised and never
 * rounded. */
static gdouble
oracle_axis (P3dcCamPrepFilter filter, guint in_size, guint resized,
    gint index, gdouble (*sample) (gpointer, gint), gpointer data)
{
  gdouble scale = (gdouble) in_size / resized;
  gdouble stretch = MAX (scale, 1.0);
  gdouble support = (filter == P3DC_CAMPREP_BILINEAR ? 1.0 : 2.0) * stretch;
  gdouble centre = (index + 0.5) * scale, sum = 0.0, total = 0.0;
  gint lo = MAX (0, (gint) (centre - support + 0.5));
  gint hi = MIN ((gint) in_size, (gint) (centre + support + 0.5));
  gint i;

  for (i = lo; i < hi; i++) {
    gdouble w = oracle_filter (filter, (i - centre + 0.5) / stretch);

    sum += w * sample (data, i);
    total += w;
  }
  return total != 0.0 ? sum / total : sum;
}

typedef struct
{
  const CamprepTestFrame *frame;
  const gdouble *row_values;
  guint y, c;
} OracleRow;

static gdouble
sample_frame (gpointer data, gint x)
{
  OracleRow *r = data;

  return r->frame->planes[0][r->y * r->frame->strides[0] + x * 3 + r->c];
}

static gdouble
sample_column (gpointer data, gint y)
{
  OracleRow *r = data;

  return r->row_values[y];
}

static gdouble
round_clamp (gdouble value)
{
  return CLAMP (floor (value + 0.5), 0.0, 255.0);
}

/* Random sizes, filters and crops against the float64 oracle (each pass
 * rounded to a byte, as PIL stores it): the 22-bit weights move a value by
 * at most one level. */
GST_START_TEST (test_float64_oracle)
{
  P3dTestRng rng;
  guint round, exact = 0, total = 0;

  p3d_test_rng_init (&rng, 3);
  for (round = 0; round < 60; round++) {
    CamprepTestFrame frame;
    P3dcCamPrepFrame view;
    P3dcCamPrepParams params;
    gdouble *horizontal;
    guint8 *out;
    guint x, y, c;

    camprep_test_frame_init (&frame, &camprep_test_formats[0],
        1 + p3d_test_rng_below (&rng, 50), 1 + p3d_test_rng_below (&rng, 50),
        1, &rng);
    camprep_test_frame_view (&frame, &view);
    params = frame.params;
    camprep_test_random_geometry (&params, &rng,
        1 + p3d_test_rng_below (&rng, 40), 1 + p3d_test_rng_below (&rng, 40));
    out = run_bytes (&params, &view);
    horizontal = g_new (gdouble, params.height);
    for (c = 0; c < 3; c++)
      for (x = 0; x < params.out_width; x++) {
        gint rx = (gint) x + params.crop_x;
        OracleRow r = { &frame, horizontal, 0, c };

        if (rx >= 0 && rx < (gint) params.resize_width)
          for (y = 0; y < params.height; y++) {
            r.y = y;
            horizontal[y] = round_clamp (oracle_axis (params.filter,
                    params.width, params.resize_width, rx, sample_frame, &r));
          }
        for (y = 0; y < params.out_height; y++) {
          gint ry = (gint) y + params.crop_y;
          gdouble want = 0.0;
          gint got = out[(c * params.out_height + y) * params.out_width + x];

          if (rx >= 0 && rx < (gint) params.resize_width && ry >= 0
              && ry < (gint) params.resize_height)
            want = round_clamp (oracle_axis (params.filter, params.height,
                    params.resize_height, ry, sample_column, &r));
          fail_unless (fabs (got - want) <= 1.0, "round %u: output (%u, %u) "
              "channel %u is %d, the float64 resize gives %g", round, x, y, c,
              got, want);
          exact += got == want;
          total++;
        }
      }
    g_free (horizontal);
    g_free (out);
    camprep_test_frame_clear (&frame);
  }
  /* the rounding differs rarely */
  fail_unless (exact > total * 0.95, "only %u of %u values exact", exact,
      total);
}

GST_END_TEST;

/* A YUV frame's RGB, converted by a float64 matrix, for frames whose chroma
 * is one value (the upsampling then keeps it exactly). */
GST_START_TEST (test_yuv_matrices)
{
  const struct
  {
    P3dcYuvMatrix matrix;
    gdouble kr, kb;
  } matrices[] = {
    {P3DC_YUV_BT601, 0.299, 0.114}, {P3DC_YUV_BT709, 0.2126, 0.0722},
    {P3DC_YUV_BT2020, 0.2627, 0.0593},
  };
  P3dTestRng rng;
  guint m, full, round;

  p3d_test_rng_init (&rng, 4);
  for (m = 0; m < G_N_ELEMENTS (matrices); m++)
    for (full = 0; full < 2; full++)
      for (round = 0; round < 20; round++) {
        gdouble kr = matrices[m].kr, kb = matrices[m].kb, kg = 1 - kr - kb;
        CamprepTestFrame frame;
        P3dcCamPrepFrame view;
        guint8 u = (guint8) p3d_test_rng_u32 (&rng);
        guint8 v = (guint8) p3d_test_rng_u32 (&rng);
        guint8 *out;
        guint x, y, c;

        camprep_test_frame_init (&frame, &camprep_test_formats[5],
            1 + p3d_test_rng_below (&rng, 9), 1 + p3d_test_rng_below (&rng, 9),
            2, &rng);
        p3dc_camprep_yuv_init (&frame.params.yuv, matrices[m].matrix, full);
        memset (frame.planes[1], u, frame.plane_sizes[1]);
        memset (frame.planes[2], v, frame.plane_sizes[2]);
        camprep_test_frame_view (&frame, &view);
        out = run_bytes (&frame.params, &view);
        for (y = 0; y < frame.params.height; y++)
          for (x = 0; x < frame.params.width; x++) {
            gdouble luma = frame.planes[0][y * frame.strides[0] + x];
            gdouble pb = u - 128.0, pr = v - 128.0, rgb[3];

            if (!full) {
              luma = (luma - 16) * 255.0 / 219.0;
              pb *= 255.0 / 224.0;
              pr *= 255.0 / 224.0;
            }
            rgb[0] = luma + 2 * (1 - kr) * pr;
            rgb[1] = luma - 2 * (1 - kb) * kb / kg * pb -
                2 * (1 - kr) * kr / kg * pr;
            rgb[2] = luma + 2 * (1 - kb) * pb;
            for (c = 0; c < 3; c++) {
              gint got = out[(c * frame.params.height + y) *
                  frame.params.width + x];

              fail_unless (fabs (got - round_clamp (rgb[c])) <= 1.0,
                  "matrix %u full %u: Y %g U %u V %u gives channel %u = %d, "
                  "the float64 matrix %g", m, full,
                  (gdouble) frame.planes[0][y * frame.strides[0] + x], u, v,
                  c, got, rgb[c]);
            }
          }
        g_free (out);
        camprep_test_frame_clear (&frame);
      }
}

GST_END_TEST;

#ifdef HAVE_LIBJPEG

/* A random RGB image as a 4:2:0 JPEG. */
static guint8 *
encode_jpeg (guint width, guint height, P3dTestRng * rng, gsize * size)
{
  struct jpeg_compress_struct cinfo;
  struct jpeg_error_mgr jerr;
  guint8 *rgb = g_malloc ((gsize) width * height * 3), *jpeg = NULL;
  unsigned long jpeg_size = 0;
  guint8 *copy;
  gsize i;

  /* smooth noise: JPEG keeps more of it than of pure noise */
  for (i = 0; i < (gsize) width * height * 3; i++)
    rgb[i] = (guint8) ((i % 3) * 70 + (i / 3 % width) * 3 +
        p3d_test_rng_below (rng, 40));
  cinfo.err = jpeg_std_error (&jerr);
  jpeg_create_compress (&cinfo);
  jpeg_mem_dest (&cinfo, &jpeg, &jpeg_size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults (&cinfo);
  jpeg_set_quality (&cinfo, 90, TRUE);
  jpeg_start_compress (&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = rgb + (gsize) cinfo.next_scanline * width * 3;

    jpeg_write_scanlines (&cinfo, &row, 1);
  }
  jpeg_finish_compress (&cinfo);
  jpeg_destroy_compress (&cinfo);
  g_free (rgb);
  copy = g_memdup2 (jpeg, jpeg_size);
  free (jpeg);
  *size = jpeg_size;
  return copy;
}

/* libjpeg's RGB decode (islow, fancy upsampling: its defaults, and PIL's). */
static guint8 *
decode_rgb (const guint8 * jpeg, gsize size)
{
  struct jpeg_decompress_struct cinfo;
  struct jpeg_error_mgr jerr;
  guint8 *rgb;

  cinfo.err = jpeg_std_error (&jerr);
  jpeg_create_decompress (&cinfo);
  jpeg_mem_src (&cinfo, jpeg, size);
  jpeg_read_header (&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  cinfo.dct_method = JDCT_ISLOW;
  jpeg_start_decompress (&cinfo);
  rgb = g_malloc ((gsize) cinfo.output_width * cinfo.output_height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = rgb + (gsize) cinfo.output_scanline * cinfo.output_width * 3;

    jpeg_read_scanlines (&cinfo, &row, 1);
  }
  jpeg_finish_decompress (&cinfo);
  jpeg_destroy_decompress (&cinfo);
  return rgb;
}

/* libjpeg's planes before its colour conversion (jpegdec's I420): Y, Cb,
 * Cr of (width + 1) / 2 x (height + 1) / 2, rows padded to the blocks. */
static void
decode_planes (const guint8 * jpeg, gsize size, CamprepTestFrame * frame)
{
  struct jpeg_decompress_struct cinfo;
  struct jpeg_error_mgr jerr;
  guint c, rows[3], i;

  cinfo.err = jpeg_std_error (&jerr);
  jpeg_create_decompress (&cinfo);
  jpeg_mem_src (&cinfo, jpeg, size);
  jpeg_read_header (&cinfo, TRUE);
  cinfo.raw_data_out = TRUE;
  cinfo.dct_method = JDCT_ISLOW;
  jpeg_start_decompress (&cinfo);
  fail_unless_equals_int (cinfo.max_v_samp_factor, 2);
  fail_unless_equals_int (cinfo.comp_info[1].h_samp_factor, 1);
  for (c = 0; c < 3; c++) {
    jpeg_component_info *comp = &cinfo.comp_info[c];

    frame->strides[c] = comp->width_in_blocks * DCTSIZE;
    rows[c] = comp->height_in_blocks * DCTSIZE + 2 * DCTSIZE;
    g_free (frame->planes[c]);
    frame->planes[c] = g_malloc0 ((gsize) frame->strides[c] * rows[c]);
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW lines[3][2 * DCTSIZE];
    JSAMPARRAY planes[3] = { lines[0], lines[1], lines[2] };

    for (c = 0; c < 3; c++) {
      guint per_call = cinfo.comp_info[c].v_samp_factor * DCTSIZE;
      guint first = cinfo.output_scanline / (c == 0 ? 1 : 2);

      for (i = 0; i < per_call; i++)
        lines[c][i] = frame->planes[c] + (gsize) (first + i) *
            frame->strides[c];
    }
    jpeg_read_raw_data (&cinfo, planes, cinfo.max_v_samp_factor * DCTSIZE);
  }
  jpeg_abort_decompress (&cinfo);
  jpeg_destroy_decompress (&cinfo);
}

/* A JPEG's planes through the YUV path (I420, and NV12 / NV21 made of the
 * same planes) give exactly libjpeg's RGB decode of the JPEG, which is
 * PIL's: the colour half of "pixel for pixel with BEVDet". */
GST_START_TEST (test_yuv_libjpeg)
{
  const guint sizes[][2] = { {1, 1}, {2, 2}, {3, 5}, {16, 16}, {17, 9},
  {33, 31}, {64, 48}, {101, 77}, {250, 3}
  };
  P3dTestRng rng;
  guint s, f;

  p3d_test_rng_init (&rng, 5);
  for (s = 0; s < G_N_ELEMENTS (sizes); s++) {
    guint width = sizes[s][0], height = sizes[s][1];
    gsize size, i;
    guint8 *jpeg = encode_jpeg (width, height, &rng, &size);
    guint8 *rgb = decode_rgb (jpeg, size);
    CamprepTestFrame planar;

    camprep_test_frame_init (&planar, &camprep_test_formats[5], width,
        height, 0, &rng);
    decode_planes (jpeg, size, &planar);
    for (f = 5; f < camprep_test_n_formats; f++) {
      const CamprepTestFormat *format = &camprep_test_formats[f];
      CamprepTestFrame frame;
      P3dcCamPrepFrame view;
      guint8 *out;
      guint x, y, c;

      camprep_test_frame_init (&frame, format, width, height, 5, &rng);
      /* the same samples in this layout */
      for (y = 0; y < height; y++)
        memcpy (frame.planes[0] + y * frame.strides[0],
            planar.planes[0] + y * planar.strides[0], width);
      for (y = 0; y < (height + 1) / 2; y++)
        for (x = 0; x < (width + 1) / 2; x++) {
          guint8 cb = planar.planes[1][y * planar.strides[1] + x];
          guint8 cr = planar.planes[2][y * planar.strides[2] + x];

          if (format->layout == P3DC_CAMPREP_YUV420_PLANAR) {
            frame.planes[1][y * frame.strides[1] + x] = cb;
            frame.planes[2][y * frame.strides[2] + x] = cr;
          } else {
            frame.planes[1][y * frame.strides[1] + 2 * x +
                format->offsets[1]] = cb;
            frame.planes[1][y * frame.strides[1] + 2 * x +
                format->offsets[2]] = cr;
          }
        }
      camprep_test_frame_view (&frame, &view);
      out = run_bytes (&frame.params, &view);
      for (y = 0; y < height; y++)
        for (x = 0; x < width; x++)
          for (c = 0; c < 3; c++) {
            guint got = out[(c * height + y) * width + x];
            guint want = rgb[(y * width + x) * 3 + c];

            fail_unless (got == want, "%ux%u %s: pixel (%u, %u) channel %u "
                "is %u, libjpeg decodes %u", width, height, format->name, x,
                y, c, got, want);
          }
      g_free (out);
      camprep_test_frame_clear (&frame);
    }
    (void) i;
    camprep_test_frame_clear (&planar);
    g_free (rgb);
    g_free (jpeg);
  }
}

GST_END_TEST;

#endif

GST_START_TEST (test_norm)
{
  const gfloat mean[3] = { 0.485f, 0.456f, 0.406f };
  const gfloat std[3] = { 0.229f, 0.224f, 0.225f };
  const gdouble mmcv_mean[3] = { 123.675, 116.28, 103.53 };
  const gdouble mmcv_std[3] = { 58.395, 57.12, 57.375 };
  P3dcCamPrepNorm norm;
  guint c, p;

  p3dc_camprep_norm_init_divide (&norm, mean, std, 255.0f);
  for (c = 0; c < 3; c++) {
    fail_unless_equals_int (norm.channel[c], c);
    for (p = 0; p < 256; p++) {
      gdouble want = (p / 255.0 - mean[c]) / std[c];

      fail_unless (fabs (norm.table[c][p] - want) <= 1e-6 * MAX (1,
              fabs (want)), "divide: channel %u byte %u is %.9g, not %.9g",
          c, p, norm.table[c][p], want);
    }
  }
  /* 0 in red: (0 - 0.485) / 0.229 */
  fail_unless (fabs (norm.table[0][0] + 2.1179039) < 1e-6);

  p3dc_camprep_norm_init_reciprocal (&norm, mmcv_mean, mmcv_std, TRUE);
  for (c = 0; c < 3; c++) {
    fail_unless_equals_int (norm.channel[c], 2 - c);
    for (p = 0; p < 256; p++) {
      gdouble want = (p - mmcv_mean[c]) / mmcv_std[c];

      fail_unless (fabs (norm.table[c][p] - want) <= 1e-6 * MAX (1,
              fabs (want)), "reciprocal: channel %u byte %u is %.9g, not "
          "%.9g", c, p, norm.table[c][p], want);
    }
  }
  p3dc_camprep_norm_init_reciprocal (&norm, mmcv_mean, mmcv_std, FALSE);
  for (c = 0; c < 3; c++)
    fail_unless_equals_int (norm.channel[c], c);
}

GST_END_TEST;

/* The normalisation and the channel order reach the output: a swapped
 * normalisation puts blue first, each value the table's. */
GST_START_TEST (test_norm_output)
{
  P3dTestRng rng;
  guint round;

  p3d_test_rng_init (&rng, 6);
  for (round = 0; round < 10; round++) {
    CamprepTestFrame frame;
    P3dcCamPrepFrame view;
    P3dcCamPrepParams params;
    P3dcCamPrepPlan *plan = NULL;
    P3dcCamPrepNorm norm;
    guint8 *bytes;
    gsize n, i;
    gfloat *out;
    guint16 *half;

    camprep_test_frame_init (&frame, &camprep_test_formats[round %
            camprep_test_n_formats], 5 + p3d_test_rng_below (&rng, 30),
        5 + p3d_test_rng_below (&rng, 30), 3, &rng);
    camprep_test_frame_view (&frame, &view);
    params = frame.params;
    camprep_test_random_geometry (&params, &rng, 12, 7);
    camprep_test_random_norm (&norm, &rng);
    bytes = run_bytes (&params, &view);
    n = (gsize) 3 *params.out_width * params.out_height;
    out = g_new (gfloat, n);
    half = g_new (guint16, n);
    fail_unless_equals_int (p3dc_camprep_plan_new (&params, &plan), P3DC_OK);
    fail_unless_equals_int (p3dc_camprep_cpu (plan, &view, &norm, out,
            FALSE), P3DC_OK);
    fail_unless_equals_int (p3dc_camprep_cpu (plan, &view, &norm, half,
            TRUE), P3DC_OK);
    for (i = 0; i < n; i++) {
      guint c = i / (params.out_width * params.out_height);
      gsize at = i % (params.out_width * params.out_height);
      guint8 byte = bytes[norm.channel[c] * params.out_width *
          params.out_height + at];

      fail_unless (out[i] == norm.table[c][byte]);
      fail_unless_equals_int (half[i], p3dc_float_to_half (out[i]));
    }
    p3dc_camprep_plan_free (plan);
    g_free (out);
    g_free (half);
    g_free (bytes);
    camprep_test_frame_clear (&frame);
  }
}

GST_END_TEST;

GST_START_TEST (test_bad_params)
{
  P3dTestRng rng;
  CamprepTestFrame frame;
  P3dcCamPrepParams good, bad;
  P3dcCamPrepPlan *plan = (P3dcCamPrepPlan *) 0x1;
  P3dcCamPrepNorm norm;
  P3dcCamPrepFrame view;
  gfloat out[3];

  p3d_test_rng_init (&rng, 7);
  camprep_test_frame_init (&frame, &camprep_test_formats[0], 8, 8, 0, &rng);
  good = frame.params;
  fail_unless_equals_int (p3dc_camprep_plan_new (&good, NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_camprep_plan_new (NULL, &plan),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (plan == NULL);
#define REFUSED(field, value) G_STMT_START {                            \
    bad = good;                                                         \
    bad.field = value;                                                  \
    plan = (P3dcCamPrepPlan *) 0x1;                                     \
    fail_unless_equals_int (p3dc_camprep_plan_new (&bad, &plan),        \
        P3DC_ERROR_INVALID_ARGUMENT);                                   \
    fail_unless (plan == NULL);                                         \
  } G_STMT_END
  REFUSED (width, 0);
  REFUSED (height, P3DC_CAMPREP_MAX_SIDE + 1);
  REFUSED (resize_width, 0);
  REFUSED (resize_height, P3DC_CAMPREP_MAX_SIDE + 1);
  REFUSED (out_width, 0);
  REFUSED (out_height, 0);
  REFUSED (crop_x, -(gint) P3DC_CAMPREP_MAX_SIDE - 1);
  REFUSED (crop_y, (gint) P3DC_CAMPREP_MAX_SIDE + 1);
  REFUSED (filter, 7);
  REFUSED (layout, 3);
  REFUSED (pixel_stride, 2);
  REFUSED (pixel_stride, 5);
  REFUSED (offsets[2], 3);
  bad = good;
  bad.layout = P3DC_CAMPREP_YUV420_SEMIPLANAR;
  bad.offsets[1] = 0;
  bad.offsets[2] = 0;
  fail_unless_equals_int (p3dc_camprep_plan_new (&bad, &plan),
      P3DC_ERROR_INVALID_ARGUMENT);
#undef REFUSED
  /* shrinking 16384 columns to one makes 65537 taps for each of 16384
   * outputs: refused instead of a gigabyte of tables */
  bad = good;
  bad.width = P3DC_CAMPREP_MAX_SIDE;
  bad.resize_width = 1;
  bad.out_width = P3DC_CAMPREP_MAX_SIDE;
  fail_unless_equals_int (p3dc_camprep_plan_new (&bad, &plan),
      P3DC_ERROR_TOO_LARGE);
  fail_unless (plan == NULL);

  fail_unless_equals_int (p3dc_camprep_plan_new (&good, &plan), P3DC_OK);
  identity_norm (&norm);
  camprep_test_frame_view (&frame, &view);
  fail_unless_equals_int (p3dc_camprep_cpu (NULL, &view, &norm, out, 0),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_camprep_cpu (plan, NULL, &norm, out, 0),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_camprep_cpu (plan, &view, NULL, out, 0),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_camprep_cpu (plan, &view, &norm, NULL, 0),
      P3DC_ERROR_INVALID_ARGUMENT);
  p3dc_camprep_plan_free (plan);
  p3dc_camprep_plan_free (NULL);
  camprep_test_frame_clear (&frame);
}

GST_END_TEST;

/* The rows a plan reads are those its vertical taps name: a crop of the
 * bottom rows reads no row above what the taps reach. */
GST_START_TEST (test_plan_rows)
{
  P3dcCamPrepParams params = { 0, };
  P3dcCamPrepPlan *plan = NULL;
  guint32 row_first = 0, row_count = 0;

  params.layout = P3DC_CAMPREP_PACKED_RGB;
  params.pixel_stride = 3;
  params.offsets[1] = 1;
  params.offsets[2] = 2;
  params.width = 1600;
  params.height = 900;
  /* BEVDet's nuScenes test-time geometry: 0.48, 768 x 432, crop (32, 176) */
  params.resize_width = 768;
  params.resize_height = 432;
  params.crop_x = 32;
  params.crop_y = 176;
  params.out_width = 704;
  params.out_height = 256;
  fail_unless_equals_int (p3dc_camprep_plan_new (&params, &plan), P3DC_OK);
  p3dc_camprep_plan_rows (plan, &row_first, &row_count);
  /* resized row 176 is centred on frame row 176.5 x 900 / 432 = 367.71;
   * its bicubic taps reach 2 x 900 / 432 = 4.17 rows up: from
   * (int) (367.71 - 4.17 + 0.5) = 364 */
  fail_unless_equals_int (row_first, 364);
  fail_unless_equals_int (row_first + row_count, 900);
  p3dc_camprep_plan_free (plan);

  /* all of the output past the resized image: no row is read */
  params.crop_y = 1000;
  fail_unless_equals_int (p3dc_camprep_plan_new (&params, &plan), P3DC_OK);
  p3dc_camprep_plan_rows (plan, &row_first, &row_count);
  fail_unless_equals_int (row_count, 0);
  p3dc_camprep_plan_free (plan);
}

GST_END_TEST;

/* A buffer [N][Ctotal][H][W] of random floats and a view of channels
 * [offset, offset + C) of it, packed channels last and first, F32 and F16,
 * against direct indexing; the same values as an F16 [N][H][W][C8] view
 * (the CUDA path's storage) pack to the same F16 bytes. */
GST_START_TEST (test_pack)
{
  P3dTestRng rng;
  guint round;

  p3d_test_rng_init (&rng, 8);
  for (round = 0; round < 20; round++) {
    guint n = 1 + p3d_test_rng_below (&rng, 4);
    guint total = 2 + p3d_test_rng_below (&rng, 20);
    guint offset = p3d_test_rng_below (&rng, total - 1);
    guint channels = 1 + p3d_test_rng_below (&rng, total - offset);
    guint h = 1 + p3d_test_rng_below (&rng, 9), w =
        1 + p3d_test_rng_below (&rng, 9);
    guint padded = (total + 7) / 8 * 8;
    gsize size = (gsize) n * total * h * w, i;
    gfloat *buffer = g_new (gfloat, size);
    guint16 *nhwc = g_new0 (guint16, (gsize) n * h * w * padded);
    P3dcMapView view = { 0, }, half_view = { 0, };
    guint last, half_out;

    for (i = 0; i < size; i++)
      buffer[i] = p3d_test_rng_uniform (&rng, -100.0f, 100.0f);
    view.data = buffer;
    view.channel_stride = (gsize) h *w;
    view.row_stride = w;
    view.column_stride = 1;
    view.batch_stride = (gsize) total *h * w;
    p3dc_map_view_offset_channels (&view, offset);
    for (i = 0; i < size; i++) {
      gsize x = i % w, y = i / w % h, c = i / ((gsize) w * h) % total;
      gsize b = i / ((gsize) w * h * total);

      nhwc[((b * h + y) * w + x) * padded + c] = p3dc_float_to_half (buffer[i]);
    }
    half_view.data = nhwc;
    half_view.half = 1;
    half_view.channel_stride = 1;
    half_view.row_stride = (gsize) w *padded;
    half_view.column_stride = padded;
    half_view.batch_stride = (gsize) h *w * padded;
    p3dc_map_view_offset_channels (&half_view, offset);

    for (last = 0; last < 2; last++)
      for (half_out = 0; half_out < 2; half_out++) {
        P3dcCamFeaturesPack pack = { n, channels, h, w, last, half_out };
        gsize count = (gsize) n * channels * h * w;
        gpointer out = g_malloc (count * 4), out_half = g_malloc (count * 4);
        guint b, c, y, x;

        fail_unless_equals_int (p3dc_camfeatures_pack_cpu (&pack, &view, out),
            P3DC_OK);
        fail_unless_equals_int (p3dc_camfeatures_pack_cpu (&pack, &half_view,
                out_half), P3DC_OK);
        for (b = 0; b < n; b++)
          for (c = 0; c < channels; c++)
            for (y = 0; y < h; y++)
              for (x = 0; x < w; x++) {
                gfloat value = buffer[(((gsize) b * total + offset + c) * h +
                        y) * w + x];
                gsize at = last ? (((gsize) b * h + y) * w + x) * channels +
                    c : (((gsize) b * channels + c) * h + y) * w + x;

                if (half_out) {
                  fail_unless_equals_int (((guint16 *) out)[at],
                      p3dc_float_to_half (value));
                  fail_unless_equals_int (((guint16 *) out_half)[at],
                      p3dc_float_to_half (value));
                } else {
                  fail_unless (((gfloat *) out)[at] == value);
                  fail_unless (((gfloat *) out_half)[at] ==
                      p3dc_half_to_float (p3dc_float_to_half (value)));
                }
              }
        g_free (out);
        g_free (out_half);
      }
    fail_unless_equals_int (p3dc_camfeatures_pack_cpu (NULL, &view, nhwc),
        P3DC_ERROR_INVALID_ARGUMENT);
    g_free (buffer);
    g_free (nhwc);
  }
}

GST_END_TEST;

static Suite *
camprep_suite (void)
{
  Suite *s = suite_create ("camprep");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_pil_fixtures);
  tcase_add_test (tc, test_hand_worked);
  tcase_add_test (tc, test_constant_and_shift);
  tcase_add_test (tc, test_float64_oracle);
  tcase_add_test (tc, test_yuv_matrices);
#ifdef HAVE_LIBJPEG
  tcase_add_test (tc, test_yuv_libjpeg);
#endif
  tcase_add_test (tc, test_norm);
  tcase_add_test (tc, test_norm_output);
  tcase_add_test (tc, test_bad_params);
  tcase_add_test (tc, test_plan_rows);
  tcase_add_test (tc, test_pack);
  return s;
}

P3D_CHECK_MAIN (camprep);
