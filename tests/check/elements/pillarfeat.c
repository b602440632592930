/* pillarfeat as an element, on its reference path: every feature set in F32
 * (the default) and F16 (asked for downstream), for every point format,
 * equal to p3dc_pillarfeat_cpu on voxels from p3dc_voxelize_cpu; caps fields
 * passed through; coords and count copied; timestamps kept; a packed record
 * accepted; a count over max-voxels clamped with one warning per stream;
 * wrong sizes and caps refused with a clear error. */
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-elem.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "pillarfeat.h"
#include "voxelize.h"

static const gdouble kitti_voxel_size[3] = { 0.16, 0.16, 4.0 };
static const gdouble kitti_range[6] = { 0.0, -39.68, -3.0, 69.12, 39.68, 1.0 };

/* A 3D grid: several z cells, so that center_z differs between voxels. */
static const gdouble cube_voxel_size[3] = { 0.5, 0.5, 0.5 };
static const gdouble cube_range[6] = { 0.0, -4.0, -3.0, 8.0, 4.0, 1.0 };

static const P3dPointFormat point_formats[] = { P3D_POINT_FORMAT_XYZ,
  P3D_POINT_FORMAT_XYZI, P3D_POINT_FORMAT_XYZIT, P3D_POINT_FORMAT_XYZIR
};

static const P3dFeatureSet feature_sets[] = { P3D_FEATURE_SET_POINTPILLARS_10,
  P3D_FEATURE_SET_MMDET3D_9, P3D_FEATURE_SET_POINTPILLARS_11
};

/* Voxels as voxelize hands them over: caps and the four tensors. */
typedef struct
{
  P3dVoxelsInfo info;
  gsize sizes[P3D_VOXELS_N_TENSORS];
  gpointer tensors[P3D_VOXELS_N_TENSORS];
} Voxels;

/* The x-pillar-features tensors the library computes for some voxels. */
typedef struct
{
  gsize sizes[P3D_PILLARS_N_TENSORS];
  gpointer tensors[P3D_PILLARS_N_TENSORS];
} Pillars;

/* Random points voxelized by the library: dense enough near the sensor
 * that some voxels hold more than max-points and that max-voxels is hit,
 * some points out of range. */
static void
voxels_make (Voxels * v, P3dPointFormat format, guint max_voxels,
    guint max_points, const gdouble * voxel_size, const gdouble * range,
    guint64 seed, gsize n_points)
{
  guint channels = p3d_point_format_get_info (format)->channels, c;
  P3dcVoxelizeParams params;
  P3dcVoxelizeOutput out;
  P3dTestRng rng;
  gfloat *points = g_new (gfloat, n_points * channels);
  gsize i;

  p3d_test_rng_init (&rng, seed);
  for (i = 0; i < n_points; i++) {
    gfloat *p = points + i * channels;

    p[0] = p3d_test_rng_uniform (&rng, -0.5f, 4.0f);
    p[1] = p3d_test_rng_uniform (&rng, -2.0f, 2.0f);
    p[2] = p3d_test_rng_uniform (&rng, -3.5f, 1.5f);
    for (c = 3; c < channels; c++)
      p[c] = p3d_test_rng_uniform (&rng, 0.0f, 1.0f);
  }

  p3d_voxels_info_init (&v->info);
  fail_unless (p3d_voxels_info_set (&v->info, format, max_voxels, max_points,
          voxel_size, range));
  v->info.fps_n = 10;
  v->info.fps_d = 1;
  fail_unless_equals_int (p3dc_voxelize_params_init (&params, voxel_size, range,
          channels, max_points, max_voxels), P3DC_OK);
  v->sizes[0] = sizeof (gfloat) * max_voxels * max_points * channels;
  v->sizes[1] = sizeof (guint32) * max_voxels;
  v->sizes[2] = sizeof (gint32) * 4 * max_voxels;
  v->sizes[3] = sizeof (guint32);
  for (i = 0; i < P3D_VOXELS_N_TENSORS; i++)
    v->tensors[i] = g_malloc0 (v->sizes[i]);
  out.voxels = v->tensors[0];
  out.num_points = v->tensors[1];
  out.coords = v->tensors[2];
  out.count = v->tensors[3];
  out.stats = NULL;
  fail_unless_equals_int (p3dc_voxelize_cpu (&params, points, n_points, &out),
      P3DC_OK);
  g_free (points);
}

static guint32
voxels_count (const Voxels * v)
{
  return *(const guint32 *) v->tensors[P3D_VOXELS_TENSOR_COUNT];
}

static void
voxels_clear (Voxels * v)
{
  guint i;

  for (i = 0; i < P3D_VOXELS_N_TENSORS; i++)
    g_free (v->tensors[i]);
}

static GstBuffer *
voxels_buffer (const Voxels * v)
{
  return elemtest_tensors_buffer (P3D_VOXELS_N_TENSORS,
      (const gconstpointer *) v->tensors, v->sizes);
}

static void
pillars_expected (Pillars * p, const Voxels * v, P3dFeatureSet set,
    gboolean half)
{
  const P3dVoxelsInfo *info = &v->info;
  P3dcPillarFeatParams params;
  P3dcPillarFeatInput in;
  P3dcPillarFeatOutput out;
  guint i;

  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          (P3dcPillarFeatureSet) set, half, info->finfo->channels,
          info->finfo->intensity, info->max_points, info->max_voxels,
          info->grid.voxel_size, info->grid.range), P3DC_OK);
  /* the size the media type gives, computed here on its own */
  p->sizes[0] = (gsize) info->max_voxels * info->max_points *
      p3d_feature_set_get_channels (set) * (half ? 2 : 4);
  fail_unless_equals_uint64 (p3dc_pillarfeat_features_size (&params),
      p->sizes[0]);
  p->sizes[1] = (gsize) info->max_voxels * 16;
  p->sizes[2] = 4;
  for (i = 0; i < P3D_PILLARS_N_TENSORS; i++)
    p->tensors[i] = g_malloc0 (p->sizes[i]);
  in.voxels = v->tensors[0];
  in.num_points = v->tensors[1];
  in.coords = v->tensors[2];
  in.count = v->tensors[3];
  out.features = p->tensors[0];
  out.coords = p->tensors[1];
  out.count = p->tensors[2];
  p3dc_pillarfeat_cpu (&params, &in, &out);
}

static void
pillars_clear (Pillars * p)
{
  guint i;

  for (i = 0; i < P3D_PILLARS_N_TENSORS; i++)
    g_free (p->tensors[i]);
}

/* The library's features for @v, and the coords and count of the voxels
 * themselves, in @out. */
static void
assert_output (GstBuffer * out, const Voxels * v, P3dFeatureSet set,
    gboolean half, const gchar * what)
{
  Pillars expected;
  gchar *name;

  pillars_expected (&expected, v, set, half);
  fail_unless_equals_int (gst_buffer_n_memory (out), P3D_PILLARS_N_TENSORS);
  name = g_strdup_printf ("%s: features", what);
  elemtest_assert_tensor (out, 0, expected.tensors[0], expected.sizes[0], name);
  g_free (name);
  name = g_strdup_printf ("%s: coords", what);
  elemtest_assert_tensor (out, 1, v->tensors[P3D_VOXELS_TENSOR_COORDS],
      expected.sizes[1], name);
  g_free (name);
  name = g_strdup_printf ("%s: count", what);
  elemtest_assert_tensor (out, 2, v->tensors[P3D_VOXELS_TENSOR_COUNT], 4, name);
  g_free (name);
  /* the library agrees on the copied tensors too */
  elemtest_assert_tensor (out, 1, expected.tensors[1], expected.sizes[1], what);
  elemtest_assert_tensor (out, 2, expected.tensors[2], 4, what);
  pillars_clear (&expected);
}

/* The negotiated output caps describe @v's grid with @set and @half. */
static void
assert_output_caps (GstHarness * h, const Voxels * v, P3dFeatureSet set,
    gboolean half)
{
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  gchar *text = gst_caps_to_string (caps);
  const GstStructure *s = gst_caps_get_structure (caps, 0);
  P3dPillarsInfo info;
  gint fps_n = 0, fps_d = 0;

  fail_unless (p3d_pillars_info_from_caps (&info, caps), "caps %s", text);
  fail_unless (gst_structure_has_name (s, "application/x-pillar-features"));
  fail_unless_equals_string (gst_structure_get_string (s, "format"),
      half ? "F16" : "F32");
  fail_unless_equals_string (gst_structure_get_string (s, "features"),
      p3d_feature_set_to_string (set));
  fail_unless_equals_int (info.channels, p3d_feature_set_get_channels (set));
  fail_unless_equals_int (info.max_voxels, v->info.max_voxels);
  fail_unless_equals_int (info.max_points, v->info.max_points);
  fail_unless (p3d_voxel_grid_is_equal (&info.grid, &v->info.grid),
      "grid not passed through: %s", text);
  fail_unless (gst_structure_get_fraction (s, "framerate", &fps_n, &fps_d),
      "no framerate: %s", text);
  fail_unless_equals_int (fps_n, 10);
  fail_unless_equals_int (fps_d, 1);
  fail_unless (!p3d_caps_is_cuda (caps), "caps %s", text);
  g_free (text);
  gst_caps_unref (caps);
}

static GstHarness *
pillarfeat_harness (const gchar * properties, const Voxels * v,
    const gchar * sink_caps)
{
  gchar *launch = g_strdup_printf ("pillarfeat backend=cpu %s", properties);
  GstHarness *h = gst_harness_new_parse (launch);

  g_free (launch);
  gst_harness_set_src_caps (h, p3d_voxels_info_to_caps (&v->info));
  gst_harness_set_sink_caps_str (h, sink_caps);
  return h;
}

GST_START_TEST (test_output_matches_library)
{
  guint f, s, half;

  for (f = 0; f < G_N_ELEMENTS (point_formats); f++) {
    Voxels v;

    voxels_make (&v, point_formats[f], 300, 8, kitti_voxel_size, kitti_range,
        200 + f, 2000);
    /* the input exercises the caps: full, and voxels cut at max-points */
    fail_unless_equals_int (voxels_count (&v), 300);
    for (s = 0; s < G_N_ELEMENTS (feature_sets); s++) {
      for (half = 0; half < 2; half++) {
        gchar *properties = g_strdup_printf ("features=%s",
            p3d_feature_set_to_string (feature_sets[s]));
        gchar *what = g_strdup_printf ("%s %s %s",
            p3d_point_format_to_string (point_formats[f]),
            p3d_feature_set_to_string (feature_sets[s]), half ? "F16" : "F32");
        /* F32 unless downstream asks for F16 */
        GstHarness *h = pillarfeat_harness (properties, &v, half ?
            "application/x-pillar-features, format=F16" :
            "application/x-pillar-features");
        GstBuffer *out;

        fail_unless_equals_int (gst_harness_push (h, voxels_buffer (&v)),
            GST_FLOW_OK);
        out = gst_harness_pull (h);
        fail_unless (out != NULL);
        assert_output_caps (h, &v, feature_sets[s], half);
        assert_output (out, &v, feature_sets[s], half, what);
        gst_buffer_unref (out);
        gst_harness_teardown (h);
        g_free (properties);
        g_free (what);
      }
    }
    voxels_clear (&v);
  }
}

GST_END_TEST;

/* Coordinates off the caps' 432 x 496 x 1 grid (x -5, y 1e6,
 * z 9, and the int32 extremes): pillarfeat indexes nothing by them; it
 * passes them on and computes the centre features from them as from any
 * coordinate, center = coord x size + (size / 2 + min) in float32, here
 * checked by hand on the first point of each such voxel. */
GST_START_TEST (test_coordinates_outside_grid)
{
  static const gint32 bad[][3] = {
    /* z, y, x */
    {0, 0, -5}, {0, 1000000, 0}, {9, 0, 0}, {G_MININT32, G_MAXINT32,
        G_MININT32}
  };
  const gfloat size[3] = { 0.16f, 0.16f, 4.0f };
  const gfloat offset[3] = { (gfloat) (0.08 + 0.0),
    (gfloat) (0.08 - 39.68), (gfloat) (2.0 - 3.0)
  };
  GstHarness *h;
  GstBuffer *out;
  GstMapInfo map;
  Voxels v;
  guint i, axis;

  voxels_make (&v, P3D_POINT_FORMAT_XYZI, 300, 8, kitti_voxel_size,
      kitti_range, 77, 2000);
  fail_unless (voxels_count (&v) >= G_N_ELEMENTS (bad));
  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    const gint32 c[4] = { 0, bad[i][0], bad[i][1], bad[i][2] };

    memcpy ((guint8 *) v.tensors[P3D_VOXELS_TENSOR_COORDS] + i * 16, c, 16);
  }
  h = pillarfeat_harness ("", &v, "application/x-pillar-features");
  fail_unless_equals_int (gst_harness_push (h, voxels_buffer (&v)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL);
  /* the coordinates passed on as they came, the rest as the library */
  assert_output (out, &v, P3D_FEATURE_SET_POINTPILLARS_10, FALSE,
      "off-grid coordinates");
  fail_unless (gst_memory_map (gst_buffer_peek_memory (out, 0), &map,
          GST_MAP_READ));
  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    const gfloat *point = (const gfloat *) v.tensors[0] + (gsize) i * 8 * 4;
    const gfloat *features = (const gfloat *) map.data + (gsize) i * 8 * 10;

    for (axis = 0; axis < 3; axis++) {
      /* coords are (z, y, x): x is bad[i][2], z bad[i][0] */
      gfloat center = (gfloat) bad[i][2 - axis] * size[axis];
      gfloat expected;

      center = center + offset[axis];
      expected = point[axis] - center;
      fail_unless (memcmp (&features[7 + axis], &expected, 4) == 0,
          "voxel %u axis %u: %.9g, expected %.9g", i, axis,
          features[7 + axis], expected);
    }
  }
  gst_memory_unmap (gst_buffer_peek_memory (out, 0), &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  voxels_clear (&v);
}

GST_END_TEST;

GST_START_TEST (test_default_is_pointpillars_10_f32)
{
  GstElement *pillarfeat = gst_element_factory_make ("pillarfeat", NULL);
  GstHarness *h;
  Voxels v;
  GstBuffer *out;
  gint features = -1;

  fail_unless (pillarfeat != NULL);
  g_object_get (pillarfeat, "features", &features, NULL);
  fail_unless_equals_int (features, P3D_FEATURE_SET_POINTPILLARS_10);
  gst_object_unref (pillarfeat);

  voxels_make (&v, P3D_POINT_FORMAT_XYZI, 200, 4, kitti_voxel_size,
      kitti_range, 7, 500);
  h = pillarfeat_harness ("", &v, "application/x-pillar-features");
  fail_unless_equals_int (gst_harness_push (h, voxels_buffer (&v)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_output_caps (h, &v, P3D_FEATURE_SET_POINTPILLARS_10, FALSE);
  assert_output (out, &v, P3D_FEATURE_SET_POINTPILLARS_10, FALSE, "default");
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  voxels_clear (&v);
}

GST_END_TEST;

/* Several z cells: the centre of each voxel's own cell, and the grid
 * fields passed through. */
GST_START_TEST (test_3d_grid)
{
  guint s;

  for (s = 0; s < G_N_ELEMENTS (feature_sets); s++) {
    gchar *properties = g_strdup_printf ("features=%s",
        p3d_feature_set_to_string (feature_sets[s]));
    GstHarness *h;
    GstBuffer *out;
    Voxels v;

    voxels_make (&v, P3D_POINT_FORMAT_XYZIR, 500, 5, cube_voxel_size,
        cube_range, 300 + s, 3000);
    fail_unless_equals_int (v.info.grid.grid[2], 8);
    h = pillarfeat_harness (properties, &v, "application/x-pillar-features");
    fail_unless_equals_int (gst_harness_push (h, voxels_buffer (&v)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    assert_output_caps (h, &v, feature_sets[s], FALSE);
    assert_output (out, &v, feature_sets[s], FALSE, properties);
    gst_buffer_unref (out);
    gst_harness_teardown (h);
    voxels_clear (&v);
    g_free (properties);
  }
}

GST_END_TEST;

/* Frames of different counts through the same pool: every byte of a
 * reused output buffer is rewritten. */
GST_START_TEST (test_counts_up_and_down)
{
  static const gsize n_points[] = { 2000, 30, 0, 900, 1 };
  GstHarness *h = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (n_points); i++) {
    GstBuffer *out;
    Voxels v;

    voxels_make (&v, P3D_POINT_FORMAT_XYZI, 300, 8, kitti_voxel_size,
        kitti_range, 400 + i, n_points[i]);
    if (h == NULL)
      h = pillarfeat_harness ("", &v, "application/x-pillar-features");
    fail_unless_equals_int (gst_harness_push (h, voxels_buffer (&v)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    assert_output (out, &v, P3D_FEATURE_SET_POINTPILLARS_10, FALSE, "frame");
    gst_buffer_unref (out);
    voxels_clear (&v);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The number of warnings on @bus, each a STREAM FORMAT naming @count and
 * max-voxels 300. */
static guint
pop_count_warnings (GstBus * bus, guint32 count)
{
  gchar *expected = g_strdup_printf ("Voxel count %u is more than "
      "max-voxels 300: only 300 voxels are read", count);
  GstMessage *warning;
  guint n = 0;

  while ((warning = elemtest_pop (bus, GST_MESSAGE_WARNING)) != NULL) {
    gchar *text = elemtest_message_text (warning);
    GError *error = NULL;

    fail_unless (strstr (text, expected) != NULL, "%s", text);
    gst_message_parse_warning (warning, &error, NULL);
    fail_unless (g_error_matches (error, GST_STREAM_ERROR,
            GST_STREAM_ERROR_FORMAT), "%s", text);
    g_clear_error (&error);
    g_free (text);
    gst_message_unref (warning);
    n++;
  }
  g_free (expected);
  return n;
}

/* A count word over max-voxels: the output is that of a full frame (every
 * one of the 300 voxels, count 300), and the reference path warns once per
 * stream, not once per frame. */
GST_START_TEST (test_count_over_max_voxels_warns_once)
{
  static const guint32 bad_counts[] = { 301, 100000, G_MAXUINT32 };
  GstBus *bus = gst_bus_new ();
  GstHarness *h;
  Voxels v;
  guint i, stream;

  voxels_make (&v, P3D_POINT_FORMAT_XYZI, 300, 8, kitti_voxel_size,
      kitti_range, 500, 2000);
  fail_unless_equals_int (voxels_count (&v), 300);
  h = pillarfeat_harness ("", &v, "application/x-pillar-features");
  gst_element_set_bus (h->element, bus);
  for (stream = 0; stream < 2; stream++) {
    if (stream > 0)
      fail_unless (gst_harness_push_event (h,
              gst_event_new_stream_start ("second")));
    for (i = 0; i < G_N_ELEMENTS (bad_counts); i++) {
      GstBuffer *in = voxels_buffer (&v), *out;
      GstMemory *count = gst_buffer_peek_memory (in, P3D_VOXELS_TENSOR_COUNT);
      GstMapInfo map;

      fail_unless (gst_memory_map (count, &map, GST_MAP_WRITE));
      memcpy (map.data, &bad_counts[i], 4);
      gst_memory_unmap (count, &map);
      fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
      out = gst_harness_pull (h);
      fail_unless (out != NULL);
      /* v itself holds count 300: what the clamped frame must equal */
      assert_output (out, &v, P3D_FEATURE_SET_POINTPILLARS_10, FALSE,
          "count over max-voxels");
      gst_buffer_unref (out);
      /* the first bad frame of the stream warns, the next ones do not */
      fail_unless_equals_int (pop_count_warnings (bus, bad_counts[0]),
          i == 0 ? 1 : 0);
    }
    /* a frame that fits posts nothing either */
    fail_unless_equals_int (gst_harness_push (h, voxels_buffer (&v)),
        GST_FLOW_OK);
    gst_buffer_unref (gst_harness_pull (h));
    fail_unless_equals_int (pop_count_warnings (bus, 0), 0);
  }
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  voxels_clear (&v);
}

GST_END_TEST;

GST_START_TEST (test_timestamps_kept)
{
  GstHarness *h;
  GstBuffer *in, *out;
  Voxels v;

  voxels_make (&v, P3D_POINT_FORMAT_XYZ, 100, 4, kitti_voxel_size,
      kitti_range, 5, 100);
  h = pillarfeat_harness ("", &v, "application/x-pillar-features");
  in = voxels_buffer (&v);
  GST_BUFFER_PTS (in) = 5 * GST_SECOND;
  GST_BUFFER_DTS (in) = 4 * GST_SECOND;
  GST_BUFFER_DURATION (in) = GST_SECOND / 10;
  GST_BUFFER_OFFSET (in) = 50;
  GST_BUFFER_OFFSET_END (in) = 51;
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 5 * GST_SECOND);
  fail_unless_equals_uint64 (GST_BUFFER_DTS (out), 4 * GST_SECOND);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), GST_SECOND / 10);
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET (out), 50);
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET_END (out), 51);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  voxels_clear (&v);
}

GST_END_TEST;

/* A record as filesink wrote it, read back in one memory, and the same
 * bytes split at places that are not tensor boundaries. */
GST_START_TEST (test_packed_record_accepted)
{
  GstHarness *h;
  GstBuffer *in, *out;
  gsize total;
  Voxels v;

  voxels_make (&v, P3D_POINT_FORMAT_XYZI, 200, 6, kitti_voxel_size,
      kitti_range, 9, 1500);
  h = pillarfeat_harness ("", &v, "application/x-pillar-features, "
      "format=F16");
  in = elemtest_packed_buffer (P3D_VOXELS_N_TENSORS,
      (const gconstpointer *) v.tensors, v.sizes);
  total = gst_buffer_get_size (in);
  fail_unless_equals_int (gst_buffer_n_memory (in), 1);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_output (out, &v, P3D_FEATURE_SET_POINTPILLARS_10, TRUE, "packed");
  gst_buffer_unref (out);

  in = elemtest_packed_buffer (P3D_VOXELS_N_TENSORS,
      (const gconstpointer *) v.tensors, v.sizes);
  {
    GstBuffer *split = gst_buffer_new ();

    gst_buffer_append_memory (split, gst_memory_share (gst_buffer_peek_memory
            (in, 0), 0, 1001));
    gst_buffer_append_memory (split, gst_memory_share (gst_buffer_peek_memory
            (in, 0), 1001, total - 1001));
    gst_buffer_unref (in);
    in = split;
  }
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_output (out, &v, P3D_FEATURE_SET_POINTPILLARS_10, TRUE, "split");
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  voxels_clear (&v);
}

GST_END_TEST;

GST_START_TEST (test_wrong_buffer_sizes_are_errors)
{
  GstBus *bus = gst_bus_new ();
  GstHarness *h;
  GstBuffer *in;
  gsize total, sizes[P3D_VOXELS_N_TENSORS];
  gchar *short_total, *caps_total, *tensor, *required, *text;
  Voxels v;

  voxels_make (&v, P3D_POINT_FORMAT_XYZI, 100, 4, kitti_voxel_size,
      kitti_range, 11, 300);
  h = pillarfeat_harness ("", &v, "application/x-pillar-features");
  gst_element_set_bus (h->element, bus);

  /* one byte short of a record */
  in = elemtest_packed_buffer (P3D_VOXELS_N_TENSORS,
      (const gconstpointer *) v.tensors, v.sizes);
  total = gst_buffer_get_size (in);
  gst_buffer_resize (in, 0, total - 1);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_ERROR);
  short_total = g_strdup_printf ("%" G_GSIZE_FORMAT " bytes", total - 1);
  caps_total = g_strdup_printf ("(%" G_GSIZE_FORMAT " bytes)", total);
  text = elemtest_expect_error (bus, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
      short_total, caps_total, NULL);
  g_free (text);

  /* four memories, num-points one entry short */
  memcpy (sizes, v.sizes, sizeof (sizes));
  sizes[1] -= 4;
  in = elemtest_tensors_buffer (P3D_VOXELS_N_TENSORS,
      (const gconstpointer *) v.tensors, sizes);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_ERROR);
  tensor = g_strdup_printf ("tensor 1 is %" G_GSIZE_FORMAT " bytes", sizes[1]);
  required = g_strdup_printf ("require %" G_GSIZE_FORMAT, v.sizes[1]);
  text = elemtest_expect_error (bus, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
      tensor, required, NULL);
  g_free (text);

  g_free (short_total);
  g_free (caps_total);
  g_free (tensor);
  g_free (required);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  voxels_clear (&v);
}

GST_END_TEST;

/* Downstream asks for pillars that do not describe the voxels. */
GST_START_TEST (test_caps_mismatch_not_negotiated)
{
  static const gchar *const cases[][2] = {
    {"", "application/x-pillar-features, max-voxels=(int)99"},
    {"", "application/x-pillar-features, max-points=(int)5"},
    {"", "application/x-pillar-features, grid=(int)<216,248,1>"},
    {"", "application/x-pillar-features, voxel-size=(double)<0.32,0.32,4.0>"},
    {"features=mmdet3d-9",
        "application/x-pillar-features, features=pointpillars-10"},
    {"", "application/x-pillar-features, format=F64"},
  };
  guint i;
  Voxels v;

  voxels_make (&v, P3D_POINT_FORMAT_XYZI, 100, 4, kitti_voxel_size,
      kitti_range, 13, 300);
  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    GstHarness *h = pillarfeat_harness (cases[i][0], &v, cases[i][1]);

    fail_unless_equals_int (gst_harness_push (h, voxels_buffer (&v)),
        GST_FLOW_NOT_NEGOTIATED);
    fail_unless_equals_int (gst_harness_buffers_received (h), 0);
    gst_harness_teardown (h);
  }
  voxels_clear (&v);
}

GST_END_TEST;

/* pillar-features caps upstream of pillarfeat: the voxels media type only. */
GST_START_TEST (test_wrong_input_media_type_refused)
{
  GstHarness *h = gst_harness_new_parse ("pillarfeat backend=cpu");
  GstBuffer *in = gst_buffer_new_allocate (NULL, 64, NULL);

  gst_harness_set_src_caps_str (h, "application/x-point-cloud, format=xyz");
  gst_harness_set_sink_caps_str (h, "application/x-pillar-features");
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_NOT_NEGOTIATED);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* features set while playing: the source pad renegotiates and the next
 * frame has the new set. */
GST_START_TEST (test_features_change_renegotiates)
{
  GstHarness *h;
  GstBuffer *out;
  Voxels v;

  voxels_make (&v, P3D_POINT_FORMAT_XYZI, 100, 4, kitti_voxel_size,
      kitti_range, 17, 400);
  h = pillarfeat_harness ("", &v, "application/x-pillar-features");
  fail_unless_equals_int (gst_harness_push (h, voxels_buffer (&v)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_output (out, &v, P3D_FEATURE_SET_POINTPILLARS_10, FALSE, "before");
  gst_buffer_unref (out);

  {
    GstElement *pillarfeat = gst_harness_find_element (h, "pillarfeat");

    gst_util_set_object_arg (G_OBJECT (pillarfeat), "features",
        "pointpillars-11");
    gst_object_unref (pillarfeat);
  }
  fail_unless_equals_int (gst_harness_push (h, voxels_buffer (&v)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_output_caps (h, &v, P3D_FEATURE_SET_POINTPILLARS_11, FALSE);
  assert_output (out, &v, P3D_FEATURE_SET_POINTPILLARS_11, FALSE, "after");
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  voxels_clear (&v);
}

GST_END_TEST;

/* features=mmdet3d-11: the caps string negotiates with a downstream that
 * asks for it by name, in both formats, and every point passes its own
 * channels 3 and 4 through (0 for a format without them). */
GST_START_TEST (test_mmdet3d_11_negotiates)
{
  static const P3dPointFormat formats[] = { P3D_POINT_FORMAT_XYZIT,
    P3D_POINT_FORMAT_XYZ
  };
  guint f, half;

  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    guint channels = p3d_point_format_get_info (formats[f])->channels;
    Voxels v;

    voxels_make (&v, formats[f], 200, 6, cube_voxel_size, cube_range,
        500 + f, 1500);
    for (half = 0; half < 2; half++) {
      GstHarness *h = pillarfeat_harness ("features=mmdet3d-11", &v, half ?
          "application/x-pillar-features, features=mmdet3d-11, format=F16" :
          "application/x-pillar-features, features=mmdet3d-11");
      const gfloat *points = v.tensors[P3D_VOXELS_TENSOR_POINTS];
      GstBuffer *out;
      GstMapInfo map;
      guint c;

      fail_unless_equals_int (gst_harness_push (h, voxels_buffer (&v)),
          GST_FLOW_OK);
      out = gst_harness_pull (h);
      fail_unless (out != NULL);
      assert_output_caps (h, &v, P3D_FEATURE_SET_MMDET3D_11, half);
      assert_output (out, &v, P3D_FEATURE_SET_MMDET3D_11, half, "mmdet3d-11");
      /* the first point of voxel 0: x y z c3 c4 as the point holds them */
      if (!half) {
        GstMemory *mem = gst_buffer_peek_memory (out, 0);

        fail_unless (gst_memory_map (mem, &map, GST_MAP_READ));
        for (c = 0; c < 5; c++) {
          gfloat want = c < channels ? points[c] : 0.0f;

          fail_unless (((const gfloat *) map.data)[c] == want,
              "%u channels: feature %u is %g, expected %g", channels, c,
              ((const gfloat *) map.data)[c], want);
        }
        gst_memory_unmap (mem, &map);
      }
      gst_buffer_unref (out);
      gst_harness_teardown (h);
    }
    voxels_clear (&v);
  }
}

GST_END_TEST;

/* Voxels whose record fits (100000 x (600 x 4 x 4 + 20) + 4 = 962000004
 * bytes) but whose pillar features do not: pointpillars-10 in F32 make
 * 100000 x (600 x 10 x 4 + 16) + 4 = 2401600004 bytes, past the
 * 2147479552 one buffer may hold. The caps are refused with the values,
 * and the format that would fit is named, not a bare not-negotiated. */
GST_START_TEST (test_pillar_record_too_large_is_an_error)
{
  const gdouble voxel_size[3] = { 0.16, 0.16, 4.0 };
  GstHarness *h = gst_harness_new_parse ("pillarfeat backend=cpu");
  GstBus *bus = gst_bus_new ();
  P3dVoxelsInfo info;
  gchar *text;

  p3d_voxels_info_init (&info);
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 100000,
          600, voxel_size, kitti_range));
  fail_unless_equals_uint64 (p3d_voxels_get_record_size (100000, 600, 4),
      962000004);
  gst_element_set_bus (h->element, bus);
  gst_harness_set_sink_caps_str (h, "application/x-pillar-features");
  gst_harness_set_src_caps (h, p3d_voxels_info_to_caps (&info));
  /* nothing pushed: the 962 MB voxels are never allocated, and the caps
   * event alone is refused */
  text = elemtest_expect_error (bus, GST_LIBRARY_ERROR,
      GST_LIBRARY_ERROR_SETTINGS, "max-voxels 100000 x max-points 600 of "
      "pointpillars-10 features in F32", "2401600004 bytes, more than the "
      "2147479552", "lower voxelize's max-voxels or max-points",
      "format=F16", NULL);
  g_free (text);

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The first error of @pipeline run to its end, from the element @source. */
static gchar *
pipeline_first_error (const gchar * description, const gchar * source)
{
  GstElement *pipeline = gst_parse_launch (description, NULL);
  GstBus *bus;
  GstMessage *msg;
  GError *error = NULL;
  gchar *message;

  fail_unless (pipeline != NULL);
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  msg =
      gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error from %s", description);
  fail_unless_equals_string (GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), source);
  gst_message_parse_error (msg, &error, NULL);
  fail_unless (g_error_matches (error, GST_LIBRARY_ERROR,
          GST_LIBRARY_ERROR_SETTINGS), "%s", error->message);
  message = g_strdup (error->message);
  g_clear_error (&error);
  gst_message_unref (msg);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  return message;
}

/* voxelize ! pillarfeat: settings too large for voxels are voxelize's
 * error, named there, before pillarfeat sees caps; settings that fit
 * voxels but not pillar features are pillarfeat's, with the same values. */
GST_START_TEST (test_voxelize_settings_too_large_in_a_pipeline)
{
  gchar *message;

  message = pipeline_first_error ("fakesrc num-buffers=1 ! "
      "application/x-point-cloud,format=xyzi ! voxelize name=v backend=cpu "
      "max-voxels=131071 max-points=1024 ! pillarfeat name=p backend=cpu ! "
      "fakesink", "v");
  fail_unless (strstr (message, "max-voxels 131071 x max-points 1024 of "
          "xyzi points") != NULL, "message: %s", message);
  g_free (message);

  message = pipeline_first_error ("fakesrc num-buffers=1 ! "
      "application/x-point-cloud,format=xyzi ! voxelize name=v backend=cpu "
      "max-voxels=100000 max-points=600 ! pillarfeat name=p backend=cpu ! "
      "fakesink", "p");
  fail_unless (strstr (message, "max-voxels 100000 x max-points 600 of "
          "pointpillars-10 features in F32 make output buffers of "
          "2401600004 bytes") != NULL, "message: %s", message);
  g_free (message);
}

GST_END_TEST;

static Suite *
pillarfeat_suite (void)
{
  Suite *s = suite_create ("pillarfeat");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_output_matches_library);
  tcase_add_test (tc, test_coordinates_outside_grid);
  tcase_add_test (tc, test_default_is_pointpillars_10_f32);
  tcase_add_test (tc, test_3d_grid);
  tcase_add_test (tc, test_counts_up_and_down);
  tcase_add_test (tc, test_count_over_max_voxels_warns_once);
  tcase_add_test (tc, test_timestamps_kept);
  tcase_add_test (tc, test_packed_record_accepted);
  tcase_add_test (tc, test_wrong_buffer_sizes_are_errors);
  tcase_add_test (tc, test_caps_mismatch_not_negotiated);
  tcase_add_test (tc, test_wrong_input_media_type_refused);
  tcase_add_test (tc, test_features_change_renegotiates);
  tcase_add_test (tc, test_mmdet3d_11_negotiates);
  tcase_add_test (tc, test_pillar_record_too_large_is_an_error);
  tcase_add_test (tc, test_voxelize_settings_too_large_in_a_pipeline);
  return s;
}

P3D_CHECK_MAIN (pillarfeat);
