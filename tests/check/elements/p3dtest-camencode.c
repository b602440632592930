/* What the tests of camencode share; see p3dtest-camencode.h. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include <gst/check/gstcheck.h>
#include <gst/video/video.h>

#include "camprep.h"
#include "half.h"
#include "p3dmodel.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "p3dtest-camencode.h"
#include "p3dtest-elem.h"

CamencodeTestModel *
camencode_test_model_new (guint cameras, guint64 seed)
{
  CamencodeTestModel *m = g_new0 (CamencodeTestModel, 1);

  p3d_test_bevdet_arch_init (&m->arch);
  m->arch.cameras = cameras;
  m->weights = p3d_test_bevdet_model_new (&m->arch, seed);
  m->config = p3d_test_bevdet_config (&m->arch, FALSE);
  m->path = tiny_model_write (m->weights, m->config, NULL);
  return m;
}

gchar *
camencode_test_model_write (CamencodeTestModel * m, const gchar * old,
    const gchar * new)
{
  gchar *config = old ? tiny_model_replace_once (m->config, old, new) :
      g_strdup (m->config);
  gchar *path = tiny_model_write (m->weights, config, NULL);

  g_free (config);
  return path;
}

void
camencode_test_model_free (CamencodeTestModel * m)
{
  g_remove (m->path);
  g_free (m->path);
  g_free (m->config);
  tiny_model_free (m->weights);
  g_free (m);
}

gchar *
camencode_test_caps (const gchar * format, guint width, guint height,
    gint fps_n)
{
  GstVideoFormat f = gst_video_format_from_string (format);
  gboolean yuv = GST_VIDEO_FORMAT_INFO_IS_YUV (gst_video_format_get_info (f));
  GString *caps = g_string_new (NULL);

  g_string_printf (caps, "video/x-raw, format=%s, width=%u, height=%u",
      format, width, height);
  if (fps_n > 0)
    g_string_append_printf (caps, ", framerate=%d/1", fps_n);
  if (yuv)
    g_string_append (caps, ", colorimetry=(string)1:4:0:0");
  return g_string_free (caps, FALSE);
}

/* A smooth random value of channel @c at (@x, @y). */
static guint8
smooth (P3dTestRng * rng, const gdouble * phase, guint x, guint y, guint c)
{
  gdouble v = 128 + 70 * sin (x * 0.11 + y * 0.07 + phase[c]) +
      40 * cos (x * 0.031 - y * 0.13 + 2 * phase[c]) +
      p3d_test_rng_uniform (rng, -12.0f, 12.0f);

  return (guint8) CLAMP (v, 0, 255);
}

GstBuffer *
camencode_test_frame (const gchar * caps_str, guint64 seed, GstClockTime pts)
{
  GstCaps *caps = gst_caps_from_string (caps_str);
  GstVideoInfo info;
  GstVideoFrame frame;
  GstBuffer *buffer;
  GstMapInfo map;
  P3dTestRng rng;
  gdouble phase[4];
  guint c;
  gint x, y;
  gsize i;

  fail_unless (gst_video_info_from_caps (&info, caps), "%s", caps_str);
  gst_caps_unref (caps);
  p3d_test_rng_init (&rng, seed);
  for (c = 0; c < 4; c++)
    phase[c] = p3d_test_rng_uniform (&rng, 0.0f, 6.28f);
  buffer = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  /* every byte random first: padding and alpha must not matter */
  gst_buffer_map (buffer, &map, GST_MAP_WRITE);
  for (i = 0; i < map.size; i++)
    map.data[i] = (guint8) p3d_test_rng_u32 (&rng);
  gst_buffer_unmap (buffer, &map);
  fail_unless (gst_video_frame_map (&frame, &info, buffer, GST_MAP_WRITE));
  for (c = 0; c < GST_VIDEO_INFO_N_COMPONENTS (&info); c++) {
    guint8 *data = GST_VIDEO_FRAME_COMP_DATA (&frame, c);
    gint stride = GST_VIDEO_FRAME_COMP_STRIDE (&frame, c);
    gint pstride = GST_VIDEO_FRAME_COMP_PSTRIDE (&frame, c);

    if (c == GST_VIDEO_COMP_A)
      continue;
    for (y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT (&frame, c); y++)
      for (x = 0; x < GST_VIDEO_FRAME_COMP_WIDTH (&frame, c); x++)
        data[y * stride + x * pstride] = smooth (&rng, phase, x, y, c);
  }
  gst_video_frame_unmap (&frame);
  GST_BUFFER_PTS (buffer) = pts;
  GST_BUFFER_DURATION (buffer) = GST_CLOCK_TIME_IS_VALID (pts) ?
      100 * GST_MSECOND : GST_CLOCK_TIME_NONE;
  return buffer;
}

GstHarness **
camencode_test_harnesses (const gchar * path, const gchar * properties,
    guint n, const gchar * const *caps, const gchar * sink_caps)
{
  gchar *description = g_strdup_printf ("camencode weights=\"%s\" %s", path,
      properties ? properties : "");
  GstElement *element = gst_parse_launch (description, NULL);
  GstHarness **h = g_new0 (GstHarness *, n);
  GstBus *bus;
  guint k;

  fail_unless (element != NULL, "%s", description);
  /* a bus before any harness: a harness plays the element, a camera's
   * caps go out when its harness gets them, and the element's thread may
   * take them (and post an error for them) before the test's first push */
  bus = gst_bus_new ();
  gst_element_set_bus (element, bus);
  gst_object_unref (bus);
  /* every camera's pad first: a harness starts the element, which checks
   * its pads against the model then */
  for (k = 0; k < n; k++) {
    gchar *pad = g_strdup_printf ("sink_%u", k);

    gst_object_unref (gst_element_request_pad_simple (element, pad));
    g_free (pad);
  }
  for (k = 0; k < n; k++) {
    gchar *pad = g_strdup_printf ("sink_%u", k);

    h[k] = gst_harness_new_with_element (element, pad, k == 0 ? "src" : NULL);
    if (caps != NULL && caps[k] != NULL)
      gst_harness_set_src_caps_str (h[k], caps[k]);
    g_free (pad);
  }
  gst_object_unref (element);
  if (sink_caps)
    gst_harness_set_sink_caps_str (h[0], sink_caps);
  gst_harness_play (h[0]);
  g_free (description);
  return h;
}

void
camencode_test_harnesses_free (GstHarness ** h, guint n)
{
  GstBus *bus = gst_element_get_bus (h[0]->element);
  guint k;

  /* the messages left on the bus hold the element */
  if (bus != NULL) {
    gst_element_set_bus (h[0]->element, NULL);
    gst_bus_set_flushing (bus, TRUE);
    gst_object_unref (bus);
  }
  for (k = n; k > 0; k--)
    gst_harness_teardown (h[k - 1]);
  g_free (h);
}

/* The frames camencode reads, described without its code: where each
 * format keeps R, G, B (packed) or its chroma (YUV). */
static const struct
{
  const gchar *name;
  P3dcCamPrepLayout layout;
  guint pixel_stride;
  guint offsets[3];
} formats[] = {
  {"RGB", P3DC_CAMPREP_PACKED_RGB, 3, {0, 1, 2}},
  {"BGR", P3DC_CAMPREP_PACKED_RGB, 3, {2, 1, 0}},
  {"RGBA", P3DC_CAMPREP_PACKED_RGB, 4, {0, 1, 2}},
  {"BGRA", P3DC_CAMPREP_PACKED_RGB, 4, {2, 1, 0}},
  {"RGBx", P3DC_CAMPREP_PACKED_RGB, 4, {0, 1, 2}},
  {"BGRx", P3DC_CAMPREP_PACKED_RGB, 4, {2, 1, 0}},
  {"xRGB", P3DC_CAMPREP_PACKED_RGB, 4, {1, 2, 3}},
  {"xBGR", P3DC_CAMPREP_PACKED_RGB, 4, {3, 2, 1}},
  {"ARGB", P3DC_CAMPREP_PACKED_RGB, 4, {1, 2, 3}},
  {"ABGR", P3DC_CAMPREP_PACKED_RGB, 4, {3, 2, 1}},
  {"I420", P3DC_CAMPREP_YUV420_PLANAR, 1, {0, 0, 0}},
  {"YV12", P3DC_CAMPREP_YUV420_PLANAR, 1, {0, 0, 0}},
  {"NV12", P3DC_CAMPREP_YUV420_SEMIPLANAR, 1, {0, 0, 1}},
  {"NV21", P3DC_CAMPREP_YUV420_SEMIPLANAR, 1, {0, 1, 0}},
};

/* Camera @camera's frame through the library's reference preprocessing. */
static void
expected_input (const P3dModelCameras * cameras, GstBuffer * buffer,
    const gchar * caps_str, const P3dcCamPrepNorm * norm, gfloat * out)
{
  GstCaps *caps = gst_caps_from_string (caps_str);
  P3dModelImageTransform t;
  P3dcCamPrepParams params = { 0, };
  P3dcCamPrepPlan *plan = NULL;
  P3dcCamPrepFrame planes = { {NULL} };
  GstVideoFrame frame;
  GstVideoInfo info;
  const gchar *colorimetry;
  gboolean bt709;
  guint f;

  fail_unless (gst_video_info_from_caps (&info, caps));
  for (f = 0; f < G_N_ELEMENTS (formats); f++)
    if (g_str_equal (formats[f].name, GST_VIDEO_INFO_NAME (&info)))
      break;
  fail_unless (f < G_N_ELEMENTS (formats), "format %s",
      GST_VIDEO_INFO_NAME (&info));
  params.layout = formats[f].layout;
  params.pixel_stride = formats[f].pixel_stride;
  memcpy (params.offsets, formats[f].offsets, sizeof (params.offsets));
  params.width = GST_VIDEO_INFO_WIDTH (&info);
  params.height = GST_VIDEO_INFO_HEIGHT (&info);
  /* camencode_test_caps() writes full-range BT.601; a test may ask for
   * bt709 (limited range) */
  colorimetry = gst_structure_get_string (gst_caps_get_structure (caps, 0),
      "colorimetry");
  bt709 = g_strcmp0 (colorimetry, "bt709") == 0;
  fail_unless (params.layout == P3DC_CAMPREP_PACKED_RGB || bt709
      || g_strcmp0 (colorimetry, "1:4:0:0") == 0, "colorimetry %s",
      colorimetry);
  p3dc_camprep_yuv_init (&params.yuv, bt709 ? P3DC_YUV_BT709 :
      P3DC_YUV_BT601, !bt709);
  params.filter = P3DC_CAMPREP_BICUBIC;
  fail_unless (p3d_model_cameras_image_transform (cameras, params.width,
          params.height, &t));
  params.resize_width = t.scaled_width;
  params.resize_height = t.scaled_height;
  params.crop_x = t.crop_x;
  params.crop_y = t.crop_y;
  params.out_width = cameras->input_width;
  params.out_height = cameras->input_height;
  gst_caps_unref (caps);
  fail_unless_equals_int (p3dc_camprep_plan_new (&params, &plan), P3DC_OK);
  fail_unless (gst_video_frame_map (&frame, &info, buffer, GST_MAP_READ));
  switch (params.layout) {
    case P3DC_CAMPREP_PACKED_RGB:
      planes.planes[0] = GST_VIDEO_FRAME_PLANE_DATA (&frame, 0);
      planes.strides[0] = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0);
      break;
    case P3DC_CAMPREP_YUV420_PLANAR:
      for (f = 0; f < 3; f++) {
        planes.planes[f] = GST_VIDEO_FRAME_COMP_DATA (&frame, f);
        planes.strides[f] = GST_VIDEO_FRAME_COMP_STRIDE (&frame, f);
      }
      break;
    default:
      for (f = 0; f < 2; f++) {
        planes.planes[f] = GST_VIDEO_FRAME_PLANE_DATA (&frame, f);
        planes.strides[f] = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, f);
      }
      break;
  }
  fail_unless_equals_int (p3dc_camprep_cpu (plan, &planes, norm, out, FALSE),
      P3DC_OK);
  gst_video_frame_unmap (&frame);
  p3dc_camprep_plan_free (plan);
}

/* Channels [@offset, + @channels) of buffer @data [N][@total][H][W] into
 * a new tensor, channels last or first, F32 or F16. */
static GBytes *
pack (const gfloat * data, guint n, guint total, guint offset,
    guint channels, guint h, guint w, gboolean last, gboolean half)
{
  gsize count = (gsize) n * channels * h * w, size = count * (half ? 2 : 4);
  guint8 *out = g_malloc (size);
  guint b, c, y, x;

  for (b = 0; b < n; b++)
    for (c = 0; c < channels; c++)
      for (y = 0; y < h; y++)
        for (x = 0; x < w; x++) {
          gfloat v = data[(((gsize) b * total + offset + c) * h + y) * w + x];
          gsize at = last ? (((gsize) b * h + y) * w + x) * channels + c :
              (((gsize) b * channels + c) * h + y) * w + x;

          if (half)
            ((guint16 *) out)[at] = p3dc_float_to_half (v);
          else
            ((gfloat *) out)[at] = v;
        }
  return g_bytes_new_take (out, size);
}

void
camencode_test_expected (const gchar * path, GstBuffer ** frames,
    const gchar * const *caps, gboolean half, GBytes ** features,
    GBytes ** depth)
{
  GError *error = NULL;
  P3dWeights *weights = p3d_weights_open (path, &error);
  P3dModel *model;
  const P3dModelNetwork *network;
  const P3dModelOutput *out_depth, *out_features;
  const P3dcConvBufferDesc *buffer;
  const P3dModelCameras *cameras;
  P3dcCamPrepNorm norm;
  gfloat mean[3], std[3], *input, **buffers;
  gsize per_camera;
  guint k;

  fail_unless (weights != NULL, "%s", error ? error->message : "");
  model = p3d_model_new (weights, &error);
  fail_unless (model != NULL, "%s", error ? error->message : "");
  p3d_weights_free (weights);
  network = p3d_model_get_network (model, "image");
  cameras = model->cameras;
  fail_unless (network != NULL && cameras != NULL);
  for (k = 0; k < 3; k++) {
    mean[k] = (gfloat) cameras->mean[k];
    std[k] = (gfloat) cameras->std[k];
  }
  p3dc_camprep_norm_init_divide (&norm, mean, std, 255.0f);
  per_camera = (gsize) 3 *cameras->input_width * cameras->input_height;
  input = g_new (gfloat, per_camera * cameras->n_cameras);
  for (k = 0; k < cameras->n_cameras; k++)
    expected_input (cameras, frames[k], caps[k], &norm, input + k * per_camera);
  buffers = p3dc_convnet_cpu_buffers_new (&network->desc);
  fail_unless_equals_int (p3dc_convnet_cpu (&network->desc, input, buffers),
      P3DC_OK);
  out_depth = p3d_model_network_get_output (network, "depth");
  out_features = p3d_model_network_get_output (network, "features");
  buffer = &network->desc.buffers[out_features->buffer];
  *features = pack (buffers[out_features->buffer], cameras->n_cameras,
      buffer->channels, out_features->channel_offset, out_features->channels,
      buffer->height, buffer->width, TRUE, half);
  buffer = &network->desc.buffers[out_depth->buffer];
  *depth = pack (buffers[out_depth->buffer], cameras->n_cameras,
      buffer->channels, out_depth->channel_offset, out_depth->channels,
      buffer->height, buffer->width, FALSE, half);
  p3dc_convnet_cpu_buffers_free (&network->desc, buffers);
  g_free (input);
  p3d_model_free (model);
}

void
camencode_test_assert_output (GstBuffer * out, GBytes * features,
    GBytes * depth, const gchar * what)
{
  gchar *label;

  fail_unless_equals_int (gst_buffer_n_memory (out), 2);
  label = g_strdup_printf ("%s: features", what);
  elemtest_assert_tensor (out, 0, g_bytes_get_data (features, NULL),
      g_bytes_get_size (features), label);
  g_free (label);
  label = g_strdup_printf ("%s: depth", what);
  elemtest_assert_tensor (out, 1, g_bytes_get_data (depth, NULL),
      g_bytes_get_size (depth), label);
  g_free (label);
}

void
camencode_test_image_aug (GstHarness * h, guint camera, gdouble aug[6])
{
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  P3dCameraFeaturesInfo info;

  fail_unless (caps != NULL);
  fail_unless (p3d_camera_features_info_from_caps (&info, caps));
  fail_unless (info.has_image);
  fail_unless (camera < info.cameras);
  memcpy (aug, info.image_aug[camera], 6 * sizeof (gdouble));
  gst_caps_unref (caps);
}
