/* The camprep and camfeatures kernels against their references, which they
 * must match bit for bit (integer arithmetic in both, the normalisation a
 * table, F16 the same rounding): rigs of 1 to 12 cameras (more than one
 * launch's chunk of 8), every frame layout, padded rows, random sizes,
 * filters and crops (past the resized image too), F32 and F16, BEVDet's
 * nuScenes geometry at full size, and guard bytes behind every output. */
#include <string.h>

#include "half.h"
#include "p3dtest-camprep.h"

typedef struct
{
  guint n;
  CamprepTestFrame frames[12];
  P3dcCamPrepPlan *plans[12];
  P3dcCamPrepNorm norm;
  guint out_width, out_height;
  /* device copies of the frames' planes */
  guint8 *device_planes[12][3];
} Rig;

static void
rig_upload (Rig * rig, P3dcCudaStream stream)
{
  guint i, k;

  for (i = 0; i < rig->n; i++)
    for (k = 0; k < rig->frames[i].n_planes; k++) {
      rig->device_planes[i][k] =
          p3d_test_device_alloc (rig->frames[i].plane_sizes[k], 0, stream);
      fail_unless_equals_int (p3dc_cuda_memcpy_htod (rig->device_planes[i][k],
              rig->frames[i].planes[k], rig->frames[i].plane_sizes[k],
              stream), P3DC_OK);
    }
}

static void
rig_clear (Rig * rig)
{
  guint i, k;

  for (i = 0; i < rig->n; i++) {
    for (k = 0; k < 3; k++)
      if (rig->device_planes[i][k])
        p3dc_cuda_free (rig->device_planes[i][k]);
    p3dc_camprep_plan_free (rig->plans[i]);
    camprep_test_frame_clear (&rig->frames[i]);
  }
  memset (rig, 0, sizeof (*rig));
}

/* Runs the rig on both paths and compares every output byte. */
static void
rig_check (Rig * rig, P3dcCudaStream stream, const gchar * what)
{
  const gsize element_sizes[2] = { 4, 2 };
  gsize per_camera = (gsize) 3 * rig->out_width * rig->out_height;
  P3dcCamPrepFrame views[12];
  P3dcCamPrepCuda *prep = NULL;
  guint i, k, half;

  rig_upload (rig, stream);
  for (i = 0; i < rig->n; i++) {
    memset (&views[i], 0, sizeof (views[i]));
    for (k = 0; k < rig->frames[i].n_planes; k++) {
      views[i].planes[k] = rig->device_planes[i][k];
      views[i].strides[k] = rig->frames[i].strides[k];
    }
  }
  fail_unless_equals_int (p3dc_camprep_cuda_new ((const P3dcCamPrepPlan *
              const *) rig->plans, rig->n, &rig->norm, &prep), P3DC_OK);
  for (half = 0; half < 2; half++) {
    gsize bytes = per_camera * rig->n * element_sizes[half];
    guint8 *device = p3d_test_device_alloc (bytes, P3D_TEST_GUARD_BYTES,
        stream);
    guint8 *got = g_malloc (bytes + P3D_TEST_GUARD_BYTES);
    guint8 *want = g_malloc (bytes);

    /* twice: the second run must not depend on the first's work planes */
    for (k = 0; k < 2; k++)
      fail_unless_equals_int (p3dc_camprep_cuda_run (prep, views, device,
              half, stream), P3DC_OK);
    p3d_test_guarded_download (got, device, bytes, stream);
    fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
    p3d_test_assert_guard (got, bytes, "network input", what);
    for (i = 0; i < rig->n; i++) {
      P3dcCamPrepFrame host;
      gsize at = i * per_camera * element_sizes[half], b;

      camprep_test_frame_view (&rig->frames[i], &host);
      fail_unless_equals_int (p3dc_camprep_cpu (rig->plans[i], &host,
              &rig->norm, want + at, half), P3DC_OK);
      for (b = 0; b < per_camera * element_sizes[half]; b++)
        fail_unless (got[at + b] == want[at + b], "%s, %s: camera %u (%s "
            "%ux%u) differs from the reference at byte %" G_GSIZE_FORMAT
            " (0x%02x, reference 0x%02x)", what, half ? "F16" : "F32", i,
            rig->frames[i].format->name, rig->frames[i].params.width,
            rig->frames[i].params.height, b, got[at + b], want[at + b]);
    }
    p3dc_cuda_free (device);
    g_free (got);
    g_free (want);
  }
  p3dc_camprep_cuda_free (prep);
}

GST_START_TEST (test_random_rigs)
{
  P3dcCudaStream stream;
  P3dTestRng rng;
  guint round;

  fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
  p3d_test_rng_init (&rng, 11);
  for (round = 0; round < 30; round++) {
    Rig rig;
    gchar *what;
    guint i;

    memset (&rig, 0, sizeof (rig));
    rig.n = 1 + p3d_test_rng_below (&rng, 12);
    rig.out_width = 1 + p3d_test_rng_below (&rng, 300);
    rig.out_height = 1 + p3d_test_rng_below (&rng, 120);
    camprep_test_random_norm (&rig.norm, &rng);
    for (i = 0; i < rig.n; i++) {
      const CamprepTestFormat *format =
          &camprep_test_formats[p3d_test_rng_below (&rng,
              camprep_test_n_formats)];
      P3dcCamPrepParams params;

      camprep_test_frame_init (&rig.frames[i], format,
          1 + p3d_test_rng_below (&rng, 400),
          1 + p3d_test_rng_below (&rng, 300), p3d_test_rng_below (&rng, 70),
          &rng);
      params = rig.frames[i].params;
      if (format->layout != P3DC_CAMPREP_PACKED_RGB)
        p3dc_camprep_yuv_init (&params.yuv, p3d_test_rng_below (&rng, 3),
            p3d_test_rng_below (&rng, 2));
      camprep_test_random_geometry (&params, &rng, rig.out_width,
          rig.out_height);
      fail_unless_equals_int (p3dc_camprep_plan_new (&params, &rig.plans[i]),
          P3DC_OK);
    }
    what = g_strdup_printf ("round %u (%u cameras, %ux%u out)", round, rig.n,
        rig.out_width, rig.out_height);
    rig_check (&rig, stream, what);
    g_free (what);
    rig_clear (&rig);
  }
  fail_unless_equals_int (p3dc_cuda_stream_destroy (stream), P3DC_OK);
}

GST_END_TEST;

/* Six 1600 x 900 frames to BEVDet's 704 x 256 (resize 0.48, crop 32, 176),
 * I420 as jpegdec gives them and RGB, torchvision's normalisation. */
GST_START_TEST (test_nuscenes)
{
  const gfloat mean[3] = { 0.485f, 0.456f, 0.406f };
  const gfloat std[3] = { 0.229f, 0.224f, 0.225f };
  P3dcCudaStream stream;
  P3dTestRng rng;
  guint layout;

  fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
  p3d_test_rng_init (&rng, 12);
  for (layout = 0; layout < 2; layout++) {
    Rig rig;
    guint i;

    memset (&rig, 0, sizeof (rig));
    rig.n = 6;
    rig.out_width = 704;
    rig.out_height = 256;
    p3dc_camprep_norm_init_divide (&rig.norm, mean, std, 255.0f);
    for (i = 0; i < rig.n; i++) {
      P3dcCamPrepParams params;

      camprep_test_frame_init (&rig.frames[i],
          &camprep_test_formats[layout ? 5 : 0], 1600, 900, 0, &rng);
      params = rig.frames[i].params;
      params.resize_width = 768;
      params.resize_height = 432;
      params.crop_x = 32;
      params.crop_y = 176;
      params.out_width = 704;
      params.out_height = 256;
      fail_unless_equals_int (p3dc_camprep_plan_new (&params, &rig.plans[i]),
          P3DC_OK);
    }
    rig_check (&rig, stream, layout ? "nuScenes I420" : "nuScenes RGB");
    rig_clear (&rig);
  }
  fail_unless_equals_int (p3dc_cuda_stream_destroy (stream), P3DC_OK);
}

GST_END_TEST;

GST_START_TEST (test_errors)
{
  P3dTestRng rng;
  CamprepTestFrame frame;
  P3dcCamPrepPlan *plans[2] = { NULL, NULL };
  P3dcCamPrepParams params;
  P3dcCamPrepNorm norm;
  P3dcCamPrepCuda *prep = (P3dcCamPrepCuda *) 0x1;

  p3d_test_rng_init (&rng, 13);
  camprep_test_frame_init (&frame, &camprep_test_formats[0], 10, 10, 0, &rng);
  camprep_test_random_norm (&norm, &rng);
  params = frame.params;
  fail_unless_equals_int (p3dc_camprep_plan_new (&params, &plans[0]), P3DC_OK);
  params.out_width = 9;
  fail_unless_equals_int (p3dc_camprep_plan_new (&params, &plans[1]), P3DC_OK);
  /* two output sizes in one rig */
  fail_unless_equals_int (p3dc_camprep_cuda_new ((const P3dcCamPrepPlan *
              const *) plans, 2, &norm, &prep), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (prep == NULL);
  fail_unless_equals_int (p3dc_camprep_cuda_new ((const P3dcCamPrepPlan *
              const *) plans, 0, &norm, &prep), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_camprep_cuda_new ((const P3dcCamPrepPlan *
              const *) plans, P3DC_CAMPREP_MAX_CAMERAS + 1, &norm, &prep),
      P3DC_ERROR_INVALID_ARGUMENT);
  norm.channel[1] = 3;
  fail_unless_equals_int (p3dc_camprep_cuda_new ((const P3dcCamPrepPlan *
              const *) plans, 1, &norm, &prep), P3DC_ERROR_INVALID_ARGUMENT);
  norm.channel[1] = 1;
  fail_unless_equals_int (p3dc_camprep_cuda_new ((const P3dcCamPrepPlan *
              const *) plans, 1, &norm, &prep), P3DC_OK);
  fail_unless_equals_int (p3dc_camprep_cuda_run (prep, NULL, (gpointer) 0x1,
          0, NULL), P3DC_ERROR_INVALID_ARGUMENT);
  p3dc_camprep_cuda_free (prep);
  p3dc_camprep_cuda_free (NULL);
  p3dc_camprep_plan_free (plans[0]);
  p3dc_camprep_plan_free (plans[1]);
  camprep_test_frame_clear (&frame);
}

GST_END_TEST;

/* The device pack against the reference pack, from an F32 NCHW and an F16
 * padded NHWC view (the device net's two storages), into every output
 * layout and format. */
GST_START_TEST (test_pack)
{
  P3dcCudaStream stream;
  P3dTestRng rng;
  guint round;

  fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
  p3d_test_rng_init (&rng, 14);
  for (round = 0; round < 20; round++) {
    guint n = 1 + p3d_test_rng_below (&rng, 6);
    guint total = 2 + p3d_test_rng_below (&rng, 130);
    guint offset = p3d_test_rng_below (&rng, total - 1);
    guint channels = 1 + p3d_test_rng_below (&rng, total - offset);
    guint h = 1 + p3d_test_rng_below (&rng, 20);
    guint w = 1 + p3d_test_rng_below (&rng, 50);
    guint padded = (total + 7) / 8 * 8;
    gsize nchw = (gsize) n * total * h * w, nhwc = (gsize) n *h * w * padded;
    gfloat *host32 = g_new (gfloat, nchw);
    guint16 *host16 = g_new (guint16, nhwc);
    gpointer device32, device16;
    guint storage, last, half_out;
    gsize i;

    for (i = 0; i < nchw; i++)
      host32[i] = p3d_test_rng_uniform (&rng, -70000.0f, 70000.0f);
    for (i = 0; i < nhwc; i++)
      host16[i] = p3dc_float_to_half (p3d_test_rng_uniform (&rng, -60000.0f,
              60000.0f));
    device32 = p3d_test_device_alloc (nchw * 4, 0, stream);
    device16 = p3d_test_device_alloc (nhwc * 2, 0, stream);
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (device32, host32, nchw * 4,
            stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (device16, host16, nhwc * 2,
            stream), P3DC_OK);
    for (storage = 0; storage < 2; storage++)
      for (last = 0; last < 2; last++)
        for (half_out = 0; half_out < 2; half_out++) {
          P3dcCamFeaturesPack pack = { n, channels, h, w, last, half_out };
          gsize bytes = (gsize) n * channels * h * w * (half_out ? 2 : 4);
          P3dcMapView host_view = { 0, }, device_view;
          guint8 *out = p3d_test_device_alloc (bytes, P3D_TEST_GUARD_BYTES,
              stream);
          guint8 *got = g_malloc (bytes + P3D_TEST_GUARD_BYTES);
          guint8 *want = g_malloc (bytes);

          if (storage == 0) {
            host_view.data = host32;
            host_view.channel_stride = (gsize) h *w;
            host_view.row_stride = w;
            host_view.column_stride = 1;
            host_view.batch_stride = (gsize) total *h * w;
          } else {
            host_view.data = host16;
            host_view.half = 1;
            host_view.channel_stride = 1;
            host_view.row_stride = (gsize) w *padded;
            host_view.column_stride = padded;
            host_view.batch_stride = (gsize) h *w * padded;
          }
          p3dc_map_view_offset_channels (&host_view, offset);
          device_view = host_view;
          device_view.data = (const guint8 *) (storage ? device16 : device32)
              + ((const guint8 *) host_view.data - (const guint8 *) (storage ?
                  (gpointer) host16 : (gpointer) host32));
          fail_unless_equals_int (p3dc_camfeatures_pack_cuda (&pack,
                  &device_view, out, stream), P3DC_OK);
          p3d_test_guarded_download (got, out, bytes, stream);
          fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream),
              P3DC_OK);
          p3d_test_assert_guard (got, bytes, "features", "pack");
          fail_unless_equals_int (p3dc_camfeatures_pack_cpu (&pack,
                  &host_view, want), P3DC_OK);
          fail_unless (memcmp (got, want, bytes) == 0, "round %u: storage %u "
              "channels_last %u half_out %u differs", round, storage, last,
              half_out);
          p3dc_cuda_free (out);
          g_free (got);
          g_free (want);
        }
    p3dc_cuda_free (device32);
    p3dc_cuda_free (device16);
    g_free (host32);
    g_free (host16);
  }
  fail_unless_equals_int (p3dc_cuda_stream_destroy (stream), P3DC_OK);
}

GST_END_TEST;

static Suite *
camprep_cuda_suite (void)
{
  Suite *s = suite_create ("camprep_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_random_rigs);
  tcase_add_test (tc, test_nuscenes);
  tcase_add_test (tc, test_errors);
  tcase_add_test (tc, test_pack);
  return s;
}

P3D_CHECK_MAIN (camprep_cuda);
