/* What the camprep tests share: frames of every layout with random bytes
 * (padding between rows included, so that a read past a row's end shows),
 * random resizes and crops, and the views of the network buffers that the
 * camfeatures packs read. */
#ifndef P3D_TEST_CAMPREP_H
#define P3D_TEST_CAMPREP_H

#include <gst/check/gstcheck.h>

#include "camfeatures.h"
#include "camprep.h"
#include "p3dtest.h"

G_BEGIN_DECLS

/* A pixel format of the frames camencode takes. */
typedef struct
{
  const gchar *name;
  P3dcCamPrepLayout layout;
  guint pixel_stride;
  guint offsets[3];
} CamprepTestFormat;

extern const CamprepTestFormat camprep_test_formats[];
extern const guint camprep_test_n_formats;

/* A frame in host memory: planes with @padding bytes after each row. */
typedef struct
{
  const CamprepTestFormat *format;
  P3dcCamPrepParams params;     /* the frame fields set; resize and crop
                                 * the identity */
  guint8 *planes[3];
  gint32 strides[3];
  gsize plane_sizes[3];
  guint n_planes;
} CamprepTestFrame;

/* A frame of @format, @width x @height, random bytes everywhere (the
 * YUV conversion full-range BT.601, libjpeg's). */
void camprep_test_frame_init (CamprepTestFrame * frame,
    const CamprepTestFormat * format, guint width, guint height,
    guint padding, P3dTestRng * rng);
void camprep_test_frame_clear (CamprepTestFrame * frame);
void camprep_test_frame_view (const CamprepTestFrame * frame,
    P3dcCamPrepFrame * view);

/* Random resize (shrinking up to 4 times, growing up to 3), filter and
 * crop of @params' frame into an @out_width x @out_height output, the crop
 * reaching past the resized image one time in four. */
void camprep_test_random_geometry (P3dcCamPrepParams * params,
    P3dTestRng * rng, guint out_width, guint out_height);

/* A normalisation with random means and deviations, sometimes swapping red
 * and blue. */
void camprep_test_random_norm (P3dcCamPrepNorm * norm, P3dTestRng * rng);

G_END_DECLS

#endif /* P3D_TEST_CAMPREP_H */
