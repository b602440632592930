/* What the camprep tests share; see p3dtest-camprep.h. */
#include "p3dtest-camprep.h"

const CamprepTestFormat camprep_test_formats[] = {
  {"RGB", P3DC_CAMPREP_PACKED_RGB, 3, {0, 1, 2}},
  {"BGR", P3DC_CAMPREP_PACKED_RGB, 3, {2, 1, 0}},
  {"RGBA", P3DC_CAMPREP_PACKED_RGB, 4, {0, 1, 2}},
  {"BGRx", P3DC_CAMPREP_PACKED_RGB, 4, {2, 1, 0}},
  {"xRGB", P3DC_CAMPREP_PACKED_RGB, 4, {1, 2, 3}},
  {"I420", P3DC_CAMPREP_YUV420_PLANAR, 1, {0, 0, 0}},
  {"NV12", P3DC_CAMPREP_YUV420_SEMIPLANAR, 1, {0, 0, 1}},
  {"NV21", P3DC_CAMPREP_YUV420_SEMIPLANAR, 1, {0, 1, 0}},
};

const guint camprep_test_n_formats = G_N_ELEMENTS (camprep_test_formats);

void
camprep_test_frame_init (CamprepTestFrame * frame,
    const CamprepTestFormat * format, guint width, guint height,
    guint padding, P3dTestRng * rng)
{
  guint chroma_width = (width + 1) / 2, chroma_height = (height + 1) / 2;
  guint rows[3] = { height, chroma_height, chroma_height };
  guint i;
  gsize b;

  memset (frame, 0, sizeof (*frame));
  frame->format = format;
  frame->params.layout = format->layout;
  frame->params.width = width;
  frame->params.height = height;
  frame->params.pixel_stride = format->pixel_stride;
  memcpy (frame->params.offsets, format->offsets, sizeof (format->offsets));
  p3dc_camprep_yuv_init (&frame->params.yuv, P3DC_YUV_BT601, TRUE);
  frame->params.filter = P3DC_CAMPREP_BICUBIC;
  frame->params.resize_width = width;
  frame->params.resize_height = height;
  frame->params.out_width = width;
  frame->params.out_height = height;
  switch (format->layout) {
    case P3DC_CAMPREP_PACKED_RGB:
      frame->n_planes = 1;
      frame->strides[0] = width * format->pixel_stride + padding;
      break;
    case P3DC_CAMPREP_YUV420_PLANAR:
      frame->n_planes = 3;
      frame->strides[0] = width + padding;
      frame->strides[1] = frame->strides[2] = chroma_width + padding;
      break;
    default:
      frame->n_planes = 2;
      frame->strides[0] = width + padding;
      frame->strides[1] = 2 * chroma_width + padding;
      break;
  }
  for (i = 0; i < frame->n_planes; i++) {
    frame->plane_sizes[i] = (gsize) frame->strides[i] * rows[i];
    frame->planes[i] = g_malloc (frame->plane_sizes[i]);
    for (b = 0; b < frame->plane_sizes[i]; b++)
      frame->planes[i][b] = (guint8) p3d_test_rng_u32 (rng);
  }
}

void
camprep_test_frame_clear (CamprepTestFrame * frame)
{
  guint i;

  for (i = 0; i < 3; i++)
    g_free (frame->planes[i]);
  memset (frame, 0, sizeof (*frame));
}

void
camprep_test_frame_view (const CamprepTestFrame * frame,
    P3dcCamPrepFrame * view)
{
  guint i;

  memset (view, 0, sizeof (*view));
  for (i = 0; i < frame->n_planes; i++) {
    view->planes[i] = frame->planes[i];
    view->strides[i] = frame->strides[i];
  }
}

void
camprep_test_random_geometry (P3dcCamPrepParams * params, P3dTestRng * rng,
    guint out_width, guint out_height)
{
  gfloat scale_x = p3d_test_rng_uniform (rng, 0.25f, 3.0f);
  gfloat scale_y = p3d_test_rng_below (rng, 2) ? scale_x :
      p3d_test_rng_uniform (rng, 0.25f, 3.0f);
  gint spare_x, spare_y;

  params->filter = p3d_test_rng_below (rng, 3) == 0 ?
      P3DC_CAMPREP_BILINEAR : P3DC_CAMPREP_BICUBIC;
  params->resize_width = MAX (1, (guint) (params->width * scale_x));
  params->resize_height = MAX (1, (guint) (params->height * scale_y));
  params->out_width = out_width;
  params->out_height = out_height;
  spare_x = (gint) params->resize_width - (gint) out_width;
  spare_y = (gint) params->resize_height - (gint) out_height;
  if (p3d_test_rng_below (rng, 4) == 0) {
    /* past an edge: some outputs are Image.crop's padding */
    params->crop_x = (gint) p3d_test_rng_below (rng, out_width + 1) -
        (gint) out_width / 2;
    params->crop_y = spare_y + (gint) p3d_test_rng_below (rng, 5);
  } else {
    params->crop_x = spare_x > 0 ? (gint) p3d_test_rng_below (rng,
        spare_x + 1) : spare_x / 2;
    params->crop_y = spare_y > 0 ? (gint) p3d_test_rng_below (rng,
        spare_y + 1) : spare_y / 2;
  }
}

void
camprep_test_random_norm (P3dcCamPrepNorm * norm, P3dTestRng * rng)
{
  gfloat mean[3], std[3];
  gdouble dmean[3], dstd[3];
  guint c;

  for (c = 0; c < 3; c++) {
    mean[c] = p3d_test_rng_uniform (rng, 0.3f, 0.6f);
    std[c] = p3d_test_rng_uniform (rng, 0.2f, 0.3f);
    dmean[c] = p3d_test_rng_uniform (rng, 90.0f, 130.0f);
    dstd[c] = p3d_test_rng_uniform (rng, 50.0f, 60.0f);
  }
  if (p3d_test_rng_below (rng, 2))
    p3dc_camprep_norm_init_divide (norm, mean, std, 255.0f);
  else
    p3dc_camprep_norm_init_reciprocal (norm, dmean, dstd,
        p3d_test_rng_below (rng, 2));
}
