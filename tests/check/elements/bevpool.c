/* bevpool as an element, on its reference path, with a small rig (two or
 * three cameras, three channels, a 6 x 4 feature map, a non-square grid)
 * whose calibration the test writes in both documented forms: output equal
 * to p3dc_bevpool_geometry_compute_cpu + p3dc_bevpool_cpu, F16/F32 in and
 * out, layouts yx and xy, both cell roundings, a calibration changed while
 * playing, and the errors of a bad configuration. */
#include <stdarg.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <json-glib/json-glib.h>

#include "bevpool.h"
#include "p3dtest-bevpoolrig.h"
#include "p3dtest-elem.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "runtime.h"

static void
params_from_config (P3dcBevPoolParams * params, const BevpoolrigConfig * c)
{
  memset (params, 0, sizeof (*params));
  params->cameras = c->cameras;
  params->channels = c->channels;
  params->image_width = BEVPOOLRIG_IMAGE_WIDTH;
  params->image_height = BEVPOOLRIG_IMAGE_HEIGHT;
  params->feat_width = c->feat_width;
  params->feat_height = c->feat_height;
  memcpy (params->xbound, c->xbound, sizeof (params->xbound));
  memcpy (params->ybound, c->ybound, sizeof (params->ybound));
  memcpy (params->zbound, c->zbound, sizeof (params->zbound));
  memcpy (params->dbound, c->dbound, sizeof (params->dbound));
  params->rounding = c->rounding;
  params->layout = c->layout;
  fail_unless_equals_int (p3dc_bevpool_params_init (params), P3DC_OK);
}

/* The library's BEV features for @f, and their size in bytes. */
static gpointer
expected_bev (const BevpoolrigConfig * c, const P3dcCameraCalib * calib,
    const BevpoolrigFrame * f, gboolean half_out, gsize * size)
{
  P3dcBevPoolParams params;
  P3dcBevGeometry *geometry = NULL;
  gpointer out;

  params_from_config (&params, c);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&params, &geometry),
      P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cpu (geometry, calib),
      P3DC_OK);
  *size = p3dc_bevpool_output_size (&params) * (half_out ? 2 : 4);
  out = g_malloc (*size);
  fail_unless_equals_int (p3dc_bevpool_cpu (geometry, f->tensors[0],
          f->tensors[1], f->half, out, half_out), P3DC_OK);
  p3dc_bevpool_geometry_free (geometry);
  return out;
}

static void
assert_bev (GstBuffer * out, const BevpoolrigConfig * c,
    const P3dcCameraCalib * calib, const BevpoolrigFrame * f, gboolean half_out,
    const gchar * what)
{
  gsize size;
  gpointer expected = expected_bev (c, calib, f, half_out, &size);

  fail_unless_equals_int (gst_buffer_n_memory (out), 1);
  elemtest_assert_tensor (out, 0, expected, size, what);
  g_free (expected);
}

static gchar *
bevpool_launch (const BevpoolrigConfig * c, const gchar * calibration)
{
  gchar *properties = bevpoolrig_properties (c, calibration, NULL);
  gchar *launch = g_strdup_printf ("bevpool backend=cpu %s", properties);

  g_free (properties);
  return launch;
}

static GstHarness *
bevpool_harness (const BevpoolrigConfig * c, const gchar * calibration,
    guint depth_bins, gboolean half_in, const gchar * sink_caps)
{
  gchar *launch = bevpool_launch (c, calibration);
  gchar *caps = bevpoolrig_caps (c, depth_bins, half_in);
  GstHarness *h = gst_harness_new_parse (launch);

  gst_harness_set_src_caps_str (h, caps);
  gst_harness_set_sink_caps_str (h, sink_caps);
  g_free (launch);
  g_free (caps);
  return h;
}

static guint64
geometry_updates (GstHarness * h)
{
  GstElement *bevpool = gst_harness_find_element (h, "bevpool");
  guint64 updates = G_MAXUINT64;

  g_object_get (bevpool, "geometry-updates", &updates, NULL);
  gst_object_unref (bevpool);
  return updates;
}

/* The output caps: format, channels (z cells stacked), the grid's sides
 * in the layout's order, the range, the framerate. */
static void
assert_bev_caps (GstHarness * h, const BevpoolrigConfig * c, gboolean half_out)
{
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  gchar *text = gst_caps_to_string (caps);
  P3dcBevPoolParams params;
  P3dBevFeaturesInfo info;
  gboolean xy = c->layout == P3DC_BEV_LAYOUT_XY;

  params_from_config (&params, c);
  fail_unless (p3d_bev_features_info_from_caps (&info, caps), "caps %s", text);
  fail_unless_equals_int (info.format, half_out ? P3D_DATA_FORMAT_F16 :
      P3D_DATA_FORMAT_F32);
  fail_unless_equals_int (info.channels, c->channels * params.nz);
  fail_unless_equals_int (info.width, xy ? params.ny : params.nx);
  fail_unless_equals_int (info.height, xy ? params.nx : params.ny);
  fail_unless_equals_int (info.layout, xy ? P3D_BEV_FEATURES_LAYOUT_XY :
      P3D_BEV_FEATURES_LAYOUT_YX);
  fail_unless (info.has_range, "no range: %s", text);
  fail_unless_equals_float (info.range[0], c->xbound[0]);
  fail_unless_equals_float (info.range[1], c->ybound[0]);
  fail_unless_equals_float (info.range[2], c->zbound[0]);
  fail_unless_equals_float (info.range[3], c->xbound[1]);
  fail_unless_equals_float (info.range[4], c->ybound[1]);
  fail_unless_equals_float (info.range[5], c->zbound[1]);
  fail_unless_equals_int (info.fps_n, 10);
  fail_unless_equals_int (info.fps_d, 1);
  g_free (text);
  gst_caps_unref (caps);
}

/* The rig puts points in the grid and off it, in several cells. */
GST_START_TEST (test_rig_is_meaningful)
{
  P3dcCameraCalib cameras[3];
  P3dcBevPoolParams params;
  P3dcBevGeometry *geometry = NULL;
  P3dcBevGeometryStats stats;
  BevpoolrigConfig c = bevpoolrig_small_config;

  c.cameras = 3;
  bevpoolrig_cameras (3, 0, cameras);
  params_from_config (&params, &c);
  fail_unless_equals_int (params.depth_bins, BEVPOOLRIG_DEPTH_BINS);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&params, &geometry),
      P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cpu (geometry,
          cameras), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_stats (geometry, &stats),
      P3DC_OK);
  fail_unless (stats.kept_points > stats.frustum_points / 4
      && stats.kept_points < stats.frustum_points, "%u of %u points kept",
      stats.kept_points, stats.frustum_points);
  fail_unless (stats.nonempty_cells > 20, "%u cells", stats.nonempty_cells);
  p3dc_bevpool_geometry_free (geometry);
}

GST_END_TEST;

/* Both calibration forms give the library's output, frame after frame. */
GST_START_TEST (test_output_matches_library)
{
  gchar *dir = bevpoolrig_make_dir ();
  guint form, cameras_count;

  for (cameras_count = 2; cameras_count <= 3; cameras_count++) {
    for (form = 0; form < 2; form++) {
      P3dcCameraCalib cameras[3];
      BevpoolrigConfig c = bevpoolrig_small_config;
      gchar *path, *what;
      GstHarness *h;
      guint frame;

      c.cameras = cameras_count;
      path =
          bevpoolrig_write_calibration (dir,
          form ? "tensor.json" : "cameras.json", cameras_count, 0, form,
          cameras);
      what =
          g_strdup_printf ("%u cameras, %s form", cameras_count,
          form ? "tensor" : "cameras");
      h = bevpool_harness (&c, path, BEVPOOLRIG_DEPTH_BINS, FALSE,
          "application/x-bev-features");
      for (frame = 0; frame < 3; frame++) {
        BevpoolrigFrame f;
        GstBuffer *out;

        bevpoolrig_frame_make (&f, &c, BEVPOOLRIG_DEPTH_BINS, FALSE,
            100 + frame);
        fail_unless_equals_int (gst_harness_push (h,
                bevpoolrig_frame_buffer (&f)), GST_FLOW_OK);
        out = gst_harness_pull (h);
        assert_bev (out, &c, cameras, &f, FALSE, what);
        gst_buffer_unref (out);
        bevpoolrig_frame_clear (&f);
      }
      assert_bev_caps (h, &c, FALSE);
      /* computed once, for the caps */
      fail_unless_equals_uint64 (geometry_updates (h), 1);
      gst_harness_teardown (h);
      g_free (path);
      g_free (what);
    }
  }
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* The output format follows the input's unless downstream asks. */
GST_START_TEST (test_formats)
{
  static const gchar *const sinks[] = { "application/x-bev-features",
    "application/x-bev-features, format=F32",
    "application/x-bev-features, format=F16",
  };
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path =
      bevpoolrig_write_calibration (dir, "calib.json", 2, 0, FALSE, cameras);
  guint half_in, s;

  for (half_in = 0; half_in < 2; half_in++) {
    for (s = 0; s < G_N_ELEMENTS (sinks); s++) {
      gboolean half_out = s == 0 ? half_in : s == 2;
      gchar *what = g_strdup_printf ("%s in, %s", half_in ? "F16" : "F32",
          sinks[s]);
      GstHarness *h = bevpool_harness (&bevpoolrig_small_config, path,
          BEVPOOLRIG_DEPTH_BINS,
          half_in, sinks[s]);
      BevpoolrigFrame f;
      GstBuffer *out;

      bevpoolrig_frame_make (&f, &bevpoolrig_small_config,
          BEVPOOLRIG_DEPTH_BINS, half_in, 200 + s);
      fail_unless_equals_int (gst_harness_push (h,
              bevpoolrig_frame_buffer (&f)), GST_FLOW_OK);
      out = gst_harness_pull (h);
      assert_bev_caps (h, &bevpoolrig_small_config, half_out);
      assert_bev (out, &bevpoolrig_small_config, cameras, &f, half_out, what);
      gst_buffer_unref (out);
      bevpoolrig_frame_clear (&f);
      gst_harness_teardown (h);
      g_free (what);
    }
  }
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* layout=xy swaps the caps' width and height and the tensor's axes. */
GST_START_TEST (test_layouts)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path =
      bevpoolrig_write_calibration (dir, "calib.json", 2, 0, FALSE, cameras);
  gpointer outputs[2];
  guint layout;

  for (layout = 0; layout < 2; layout++) {
    BevpoolrigConfig c = bevpoolrig_small_config;
    GstHarness *h;
    BevpoolrigFrame f;
    GstBuffer *out;
    GstMapInfo info;

    c.layout = layout ? P3DC_BEV_LAYOUT_XY : P3DC_BEV_LAYOUT_YX;
    h = bevpool_harness (&c, path, BEVPOOLRIG_DEPTH_BINS, FALSE,
        "application/x-bev-features");
    bevpoolrig_frame_make (&f, &c, BEVPOOLRIG_DEPTH_BINS, FALSE, 300);
    fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    assert_bev_caps (h, &c, FALSE);
    assert_bev (out, &c, cameras, &f, FALSE, layout ? "xy" : "yx");
    fail_unless (gst_buffer_map (out, &info, GST_MAP_READ));
    outputs[layout] = g_memdup2 (info.data, info.size);
    gst_buffer_unmap (out, &info);
    gst_buffer_unref (out);
    bevpoolrig_frame_clear (&f);
    gst_harness_teardown (h);
  }
  /* the same cells, transposed: cell (x, y) of channel k */
  {
    const gfloat *yx = outputs[0], *xy = outputs[1];
    guint k, x, y, nx = 16, ny = 8;

    for (k = 0; k < bevpoolrig_small_config.channels; k++)
      for (y = 0; y < ny; y++)
        for (x = 0; x < nx; x++)
          fail_unless (yx[(k * ny + y) * nx + x] == xy[(k * nx + x) * ny + y],
              "channel %u cell (%u, %u): %g in yx, %g in xy", k, x, y,
              yx[(k * ny + y) * nx + x], xy[(k * nx + x) * ny + y]);
  }
  g_free (outputs[0]);
  g_free (outputs[1]);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* Several z cells are stacked along the channels. */
GST_START_TEST (test_z_cells_stacked)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path =
      bevpoolrig_write_calibration (dir, "calib.json", 2, 0, TRUE, cameras);
  BevpoolrigConfig c = bevpoolrig_small_config;
  GstHarness *h;
  BevpoolrigFrame f;
  GstBuffer *out;

  c.zbound[2] = 2.0;            /* 3 cells */
  h = bevpool_harness (&c, path, BEVPOOLRIG_DEPTH_BINS, FALSE,
      "application/x-bev-features");
  bevpoolrig_frame_make (&f, &c, BEVPOOLRIG_DEPTH_BINS, FALSE, 400);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_bev_caps (h, &c, FALSE);
  assert_bev (out, &c, cameras, &f, FALSE, "3 z cells");
  gst_buffer_unref (out);
  bevpoolrig_frame_clear (&f);
  gst_harness_teardown (h);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* truncate (the default) keeps the points up to one step below a lower
 * bound in the first cell; floor drops them: the outputs differ. */
GST_START_TEST (test_cell_rounding)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path =
      bevpoolrig_write_calibration (dir, "calib.json", 2, 0, FALSE, cameras);
  gpointer outputs[2];
  gsize size = 0;
  guint rounding;

  for (rounding = 0; rounding < 2; rounding++) {
    BevpoolrigConfig c = bevpoolrig_small_config;
    GstHarness *h;
    BevpoolrigFrame f;
    GstBuffer *out;
    GstMapInfo info;

    c.rounding = rounding ? P3DC_BEV_ROUND_FLOOR : P3DC_BEV_ROUND_TRUNCATE;
    h = bevpool_harness (&c, path, BEVPOOLRIG_DEPTH_BINS, FALSE,
        "application/x-bev-features");
    if (rounding == 0) {
      GstElement *bevpool = gst_harness_find_element (h, "bevpool");
      gint value = -1;

      g_object_get (bevpool, "cell-rounding", &value, NULL);
      fail_unless_equals_int (value, P3DC_BEV_ROUND_TRUNCATE);
      gst_object_unref (bevpool);
    }
    bevpoolrig_frame_make (&f, &c, BEVPOOLRIG_DEPTH_BINS, FALSE, 500);
    fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    assert_bev (out, &c, cameras, &f, FALSE, rounding ? "floor" : "truncate");
    fail_unless (gst_buffer_map (out, &info, GST_MAP_READ));
    outputs[rounding] = g_memdup2 (info.data, info.size);
    size = info.size;
    gst_buffer_unmap (out, &info);
    gst_buffer_unref (out);
    bevpoolrig_frame_clear (&f);
    gst_harness_teardown (h);
  }
  fail_unless (memcmp (outputs[0], outputs[1], size) != 0,
      "truncate and floor agree on a rig with points below the bounds");
  g_free (outputs[0]);
  g_free (outputs[1]);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* A new calibration file set while playing: the next buffer uses its
 * geometry and geometry-updates counts it; setting the property again
 * after rewriting the file reloads it too. */
GST_START_TEST (test_calibration_change_while_playing)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib first[2], second[2], third[2];
  gchar *path_a =
      bevpoolrig_write_calibration (dir, "a.json", 2, 0, FALSE, first);
  gchar *path_b =
      bevpoolrig_write_calibration (dir, "b.json", 2, 1, TRUE, second);
  GstHarness *h =
      bevpool_harness (&bevpoolrig_small_config, path_a, BEVPOOLRIG_DEPTH_BINS,
      FALSE,
      "application/x-bev-features");
  GstElement *bevpool = gst_harness_find_element (h, "bevpool");
  gpointer before, after;
  gsize size;
  GstBuffer *out;
  BevpoolrigFrame f;
  gchar *json;

  bevpoolrig_frame_make (&f, &bevpoolrig_small_config, BEVPOOLRIG_DEPTH_BINS,
      FALSE, 600);
  /* the two calibrations give different outputs */
  before = expected_bev (&bevpoolrig_small_config, first, &f, FALSE, &size);
  after = expected_bev (&bevpoolrig_small_config, second, &f, FALSE, &size);
  fail_unless (memcmp (before, after, size) != 0);
  g_free (before);
  g_free (after);

  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_bev (out, &bevpoolrig_small_config, first, &f, FALSE,
      "first calibration");
  gst_buffer_unref (out);
  fail_unless_equals_uint64 (geometry_updates (h), 1);

  g_object_set (bevpool, "calibration", path_b, NULL);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_bev (out, &bevpoolrig_small_config, second, &f, FALSE,
      "second calibration");
  gst_buffer_unref (out);
  fail_unless_equals_uint64 (geometry_updates (h), 2);

  /* no change: no new geometry */
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_bev (out, &bevpoolrig_small_config, second, &f, FALSE, "unchanged");
  gst_buffer_unref (out);
  fail_unless_equals_uint64 (geometry_updates (h), 2);

  /* the first file rewritten with the second mounting and set again */
  bevpoolrig_cameras (2, 1, third);
  json = bevpoolrig_calibration_json (third, 2, FALSE);
  g_free (elemtest_write_file (dir, "a.json", json));
  g_free (json);
  g_object_set (bevpool, "calibration", path_a, NULL);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_bev (out, &bevpoolrig_small_config, third, &f, FALSE,
      "rewritten file");
  gst_buffer_unref (out);
  fail_unless_equals_uint64 (geometry_updates (h), 3);

  bevpoolrig_frame_clear (&f);
  gst_object_unref (bevpool);
  gst_harness_teardown (h);
  g_free (path_a);
  g_free (path_b);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* New caps of the same sizes (another framerate, another format) keep the
 * geometry, as DESIGN.md says ("recomputed only when calibration or sizes
 * change"); new sizes recompute it. */
GST_START_TEST (test_geometry_kept_when_sizes_unchanged)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path =
      bevpoolrig_write_calibration (dir, "calib.json", 2, 0, FALSE, cameras);
  GstHarness *h =
      bevpool_harness (&bevpoolrig_small_config, path, BEVPOOLRIG_DEPTH_BINS,
      FALSE,
      "application/x-bev-features");
  BevpoolrigConfig wider = bevpoolrig_small_config;
  gchar *caps;
  BevpoolrigFrame f;
  GstBuffer *out;

  bevpoolrig_frame_make (&f, &bevpoolrig_small_config, BEVPOOLRIG_DEPTH_BINS,
      FALSE, 1000);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  bevpoolrig_frame_clear (&f);
  fail_unless_equals_uint64 (geometry_updates (h), 1);

  /* F16 at another framerate: same sizes */
  gst_harness_set_src_caps_str (h, "application/x-camera-features, "
      "format=F16, cameras=(int)2, channels=(int)3, depth-bins=(int)8, "
      "width=(int)6, height=(int)4, framerate=(fraction)20/1");
  bevpoolrig_frame_make (&f, &bevpoolrig_small_config, BEVPOOLRIG_DEPTH_BINS,
      TRUE, 1001);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_bev (out, &bevpoolrig_small_config, cameras, &f, TRUE, "F16 at 20/1");
  gst_buffer_unref (out);
  bevpoolrig_frame_clear (&f);
  fail_unless_equals_uint64 (geometry_updates (h), 1);

  /* a wider feature map: new geometry */
  wider.feat_width = 7;
  caps = bevpoolrig_caps (&wider, BEVPOOLRIG_DEPTH_BINS, FALSE);
  gst_harness_set_src_caps_str (h, caps);
  bevpoolrig_frame_make (&f, &wider, BEVPOOLRIG_DEPTH_BINS, FALSE, 1002);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_bev (out, &wider, cameras, &f, FALSE, "7 wide");
  gst_buffer_unref (out);
  bevpoolrig_frame_clear (&f);
  fail_unless_equals_uint64 (geometry_updates (h), 2);
  g_free (caps);

  gst_harness_teardown (h);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* camencode's caps name each camera's image augmentation and the network
 * input: bevpool's frustum then uses them in place of the calibration's
 * img_aug and its image-width / image-height properties (which are set to
 * other values here), giving the output of a calibration that holds that
 * augmentation; a new image-aug in the caps recomputes the geometry, the
 * same one does not. */
GST_START_TEST (test_caps_image_aug)
{
  const gdouble augs[2][6] = { {0.5, 0, -3, 0, 0.5, -2}, {-1, 0, 47, 0, 1, 0}
  };
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path = bevpoolrig_write_calibration (dir, "calib.json", 2, 0, FALSE,
      cameras);
  const BevpoolrigConfig *c = &bevpoolrig_small_config;
  gchar *properties = bevpoolrig_properties (c, path,
      "image-width=100 image-height=60");
  gchar *launch = g_strdup_printf ("bevpool backend=cpu %s", properties);
  GstHarness *h = gst_harness_new_parse (launch);
  guint variant, frame = 0;

  gst_harness_set_sink_caps_str (h, "application/x-bev-features");
  for (variant = 0; variant < 3; variant++) {
    const gdouble *aug = augs[variant == 1];
    gchar *base = bevpoolrig_caps (c, BEVPOOLRIG_DEPTH_BINS, FALSE);
    gchar *caps = g_strdup_printf ("%s, image-width=(int)%u, "
        "image-height=(int)%u, image-aug=(double)<%.17g,%.17g,%.17g,%.17g,"
        "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g>", base,
        BEVPOOLRIG_IMAGE_WIDTH, BEVPOOLRIG_IMAGE_HEIGHT, aug[0], aug[1],
        aug[2], aug[3], aug[4], aug[5], aug[0], aug[1], aug[2], aug[3],
        aug[4], aug[5]);
    P3dcCameraCalib expected[2];
    guint i;

    memcpy (expected, cameras, sizeof (expected));
    for (i = 0; i < 2; i++) {
      memset (expected[i].img_aug, 0, sizeof (expected[i].img_aug));
      expected[i].img_aug[0] = aug[0];
      expected[i].img_aug[1] = aug[1];
      expected[i].img_aug[3] = aug[2];
      expected[i].img_aug[4] = aug[3];
      expected[i].img_aug[5] = aug[4];
      expected[i].img_aug[7] = aug[5];
      expected[i].img_aug[10] = expected[i].img_aug[15] = 1.0;
    }
    gst_harness_set_src_caps_str (h, caps);
    for (i = 0; i < 2; i++) {
      BevpoolrigFrame f;
      GstBuffer *out;

      bevpoolrig_frame_make (&f, c, BEVPOOLRIG_DEPTH_BINS, FALSE, 1100 +
          frame++);
      fail_unless_equals_int (gst_harness_push (h,
              bevpoolrig_frame_buffer (&f)), GST_FLOW_OK);
      out = gst_harness_pull (h);
      assert_bev (out, c, expected, &f, FALSE, caps);
      gst_buffer_unref (out);
      bevpoolrig_frame_clear (&f);
    }
    /* the transform of variant 0, then another, then variant 0 again */
    fail_unless_equals_uint64 (geometry_updates (h), variant + 1);
    g_free (caps);
    g_free (base);
  }
  gst_harness_teardown (h);
  g_free (launch);
  g_free (properties);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* A record as filesink wrote it: both tensors in one memory. */
GST_START_TEST (test_packed_record_accepted)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path =
      bevpoolrig_write_calibration (dir, "calib.json", 2, 0, FALSE, cameras);
  GstHarness *h =
      bevpool_harness (&bevpoolrig_small_config, path, BEVPOOLRIG_DEPTH_BINS,
      TRUE,
      "application/x-bev-features");
  BevpoolrigFrame f;
  GstBuffer *out;

  bevpoolrig_frame_make (&f, &bevpoolrig_small_config, BEVPOOLRIG_DEPTH_BINS,
      TRUE, 700);
  fail_unless_equals_int (gst_harness_push (h, elemtest_packed_buffer (2,
              (const gconstpointer *) f.tensors, f.sizes)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_bev (out, &bevpoolrig_small_config, cameras, &f, TRUE, "packed");
  gst_buffer_unref (out);
  bevpoolrig_frame_clear (&f);
  gst_harness_teardown (h);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* Starts a bare bevpool with @calibration (NULL: none) and checks the
 * error that refuses the start: RESOURCE @code, with the strings that
 * follow (NULL-terminated) in its text. */
static void
assert_start_error (const gchar * calibration, GQuark domain, gint code, ...)
{
  GstElement *bevpool = gst_element_factory_make ("bevpool", NULL);
  GstBus *bus = gst_bus_new ();
  GstMessage *message;
  GError *error = NULL;
  const gchar *needle;
  gchar *text;
  va_list args;

  g_object_set (bevpool, "backend", 2 /* cpu */ , NULL);
  if (calibration)
    g_object_set (bevpool, "calibration", calibration, NULL);
  gst_element_set_bus (bevpool, bus);
  fail_unless_equals_int (gst_element_set_state (bevpool, GST_STATE_PLAYING),
      GST_STATE_CHANGE_FAILURE);
  message = elemtest_pop (bus, GST_MESSAGE_ERROR);
  fail_unless (message != NULL, "%s: no error", GST_STR_NULL (calibration));
  text = elemtest_message_text (message);
  gst_message_parse_error (message, &error, NULL);
  fail_unless (error->domain == domain && error->code == code,
      "%s: error %s %d: %s", GST_STR_NULL (calibration),
      g_quark_to_string (error->domain), error->code, text);
  va_start (args, code);
  while ((needle = va_arg (args, ElemtestNeedle)) != NULL)
    fail_unless (strstr (text, needle) != NULL, "the error does not say "
        "\"%s\": %s", needle, text);
  va_end (args);
  g_clear_error (&error);
  g_free (text);
  gst_message_unref (message);
  gst_element_set_state (bevpool, GST_STATE_NULL);
  gst_element_set_bus (bevpool, NULL);
  gst_object_unref (bus);
  gst_object_unref (bevpool);
}

/* Issue 32.4: a grid whose frames cost minutes (zbound's 1 cm step: 2000
 * height cells, 2 GB frames of a tiny input) or depth bins past the limit
 * are refused at start, naming the properties; the largest grid allowed
 * starts. */
GST_START_TEST (test_grid_limits)
{
  static const struct
  {
    const gchar *property, *value;
    const gchar *words[3];
  } cases[] = {
    {"zbound", "<-10,10,0.01>", {"Invalid properties xbound, ybound and "
                "zbound", "360 x 360 x 2000 = 259200000 cells, more than "
                "bevpool's limit of 4194304", "zbound's step"}},
    {"xbound", "<-500,500,0.05>", {"20000 x 360 x 1 = 7200000 cells", NULL}},
    {"dbound", "<1,60,0.001>", {"Invalid property dbound: <1,60,0.001> makes "
                "59000 depth bins, more than bevpool's limit of 1024", NULL}},
  };
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path = bevpoolrig_write_calibration (dir, "two.json", 2, 0, FALSE,
      cameras);
  GstElement *bevpool;
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    GstBus *bus = gst_bus_new ();
    GstMessage *message;
    GError *error = NULL;

    bevpool = gst_element_factory_make ("bevpool", NULL);
    g_object_set (bevpool, "backend", 2 /* cpu */ , "calibration", path,
        NULL);
    gst_util_set_object_arg (G_OBJECT (bevpool), cases[i].property,
        cases[i].value);
    gst_element_set_bus (bevpool, bus);
    fail_unless_equals_int (gst_element_set_state (bevpool, GST_STATE_PAUSED),
        GST_STATE_CHANGE_FAILURE);
    message = elemtest_pop (bus, GST_MESSAGE_ERROR);
    fail_unless (message != NULL, "%s=%s started", cases[i].property,
        cases[i].value);
    gst_message_parse_error (message, &error, NULL);
    fail_unless (g_error_matches (error, GST_RESOURCE_ERROR,
            GST_RESOURCE_ERROR_SETTINGS), "%s", error->message);
    for (j = 0; j < G_N_ELEMENTS (cases[i].words) && cases[i].words[j]; j++)
      fail_unless (strstr (error->message, cases[i].words[j]) != NULL,
          "\"%s\" not in %s", cases[i].words[j], error->message);
    g_clear_error (&error);
    gst_message_unref (message);
    gst_element_set_state (bevpool, GST_STATE_NULL);
    gst_element_set_bus (bevpool, NULL);
    gst_object_unref (bus);
    gst_object_unref (bevpool);
  }
  /* 2048 x 2048 x 1: the limit itself */
  bevpool = gst_element_factory_make ("bevpool", NULL);
  g_object_set (bevpool, "backend", 2 /* cpu */ , "calibration", path, NULL);
  gst_util_set_object_arg (G_OBJECT (bevpool), "xbound", "<-102.4,102.4,0.1>");
  gst_util_set_object_arg (G_OBJECT (bevpool), "ybound", "<-102.4,102.4,0.1>");
  fail_unless (gst_element_set_state (bevpool, GST_STATE_PAUSED) !=
      GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (bevpool, GST_STATE_NULL);
  gst_object_unref (bevpool);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_no_calibration_is_an_error)
{
  assert_start_error (NULL, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
      "calibration", NULL);
}

GST_END_TEST;

GST_START_TEST (test_unreadable_calibration_is_an_error)
{
  gchar *dir = bevpoolrig_make_dir ();
  gchar *path = g_build_filename (dir, "missing.json", NULL);

  assert_start_error (path, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
      path, "does not exist", "cannot read", NULL);
  /* a directory is there, but cannot be read as a file */
  assert_start_error (dir, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
      dir, "Cannot read calibration file", NULL);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_invalid_json_is_an_error)
{
  gchar *dir = bevpoolrig_make_dir ();
  gchar *path = elemtest_write_file (dir, "bad.json",
      "{ \"cameras\": [ { \"intrinsics\": [[1, 0, 0], ");
  gchar *text = elemtest_write_file (dir, "text.json", "cameras: 6\n");
  gchar *array = elemtest_write_file (dir, "array.json", "[1, 2, 3]\n");
  gchar *neither = elemtest_write_file (dir, "neither.json",
      "{\"lidar\": {}}\n");

  assert_start_error (path, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE, path,
      "not valid JSON", NULL);
  assert_start_error (text, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE, text,
      "not valid JSON", NULL);
  assert_start_error (array, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE, array,
      "not a JSON object", NULL);
  assert_start_error (neither, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
      neither, "cameras", "camera_intrinsics", NULL);
  g_free (path);
  g_free (text);
  g_free (array);
  g_free (neither);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* A calibration document with one key of the rig's removed. */
static gchar *
write_without (const gchar * dir, const gchar * name, gboolean tensor_form,
    guint camera, const gchar * key)
{
  P3dcCameraCalib cameras[2];
  JsonParser *parser = json_parser_new ();
  JsonObject *root;
  gchar *json, *path;

  bevpoolrig_cameras (2, 0, cameras);
  json = bevpoolrig_calibration_json (cameras, 2, tensor_form);
  fail_unless (json_parser_load_from_data (parser, json, -1, NULL));
  g_free (json);
  root = json_node_get_object (json_parser_get_root (parser));
  if (tensor_form)
    json_object_remove_member (root, key);
  else
    json_object_remove_member (json_array_get_object_element
        (json_object_get_array_member (root, "cameras"), camera), key);
  json = json_to_string (json_parser_get_root (parser), TRUE);
  path = elemtest_write_file (dir, name, json);
  g_free (json);
  g_object_unref (parser);
  return path;
}

GST_START_TEST (test_missing_key_is_an_error)
{
  gchar *dir = bevpoolrig_make_dir ();
  gchar *no_c2l = write_without (dir, "a.json", FALSE, 1, "camera_to_lidar");
  gchar *no_k = write_without (dir, "b.json", FALSE, 0, "intrinsics");
  gchar *no_tensor = write_without (dir, "c.json", TRUE, 0, "camera2lidar");
  gchar *no_aug = write_without (dir, "d.json", TRUE, 0, "img_aug_matrix");

  assert_start_error (no_c2l, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE, no_c2l,
      "cameras[1].camera_to_lidar", NULL);
  assert_start_error (no_k, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE, no_k,
      "cameras[0].intrinsics", NULL);
  assert_start_error (no_tensor, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
      no_tensor, "camera2lidar", NULL);
  assert_start_error (no_aug, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE, no_aug,
      "img_aug_matrix", NULL);
  g_free (no_c2l);
  g_free (no_k);
  g_free (no_tensor);
  g_free (no_aug);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* A 3x4 matrix (KITTI's P2 shape) where a 4x4 (or 3x3) is expected. */
GST_START_TEST (test_3x4_matrix_is_an_error)
{
  gchar *dir = bevpoolrig_make_dir ();
  const gchar *rows = "[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]";
  const gchar *k = "[[40, 0, 24], [0, 40, 16], [0, 0, 1]]";
  const gchar *t = "[[0, 0, 1, 0], [-1, 0, 0, 0], [0, -1, 0, 1], "
      "[0, 0, 0, 1]]";
  gchar *json, *c2l, *intrinsics;

  json = g_strdup_printf ("{\"cameras\": [{\"intrinsics\": %s, "
      "\"camera_to_lidar\": %s}]}", k, rows);
  c2l = elemtest_write_file (dir, "c2l.json", json);
  g_free (json);
  json = g_strdup_printf ("{\"cameras\": [{\"intrinsics\": %s, "
      "\"camera_to_lidar\": %s}]}", rows, t);
  intrinsics = elemtest_write_file (dir, "k.json", json);
  g_free (json);

  assert_start_error (c2l, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE, c2l,
      "cameras[0].camera_to_lidar", "3 rows", NULL);
  assert_start_error (intrinsics, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
      intrinsics, "cameras[0].intrinsics", NULL);
  g_free (c2l);
  g_free (intrinsics);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* An error at negotiation: @caps pushed to a bevpool of @calibration;
 * returns the error's text after checking @domain and @code. */
static gchar *
negotiation_error (const gchar * calibration, const gchar * caps,
    GQuark domain, gint code)
{
  gchar *launch = bevpool_launch (&bevpoolrig_small_config, calibration);
  gchar *text = elemtest_expect_caps_refused (launch, caps,
      "application/x-bev-features", domain, code, NULL);

  g_free (launch);
  return text;
}

GST_START_TEST (test_cameras_mismatch_is_an_error)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path =
      bevpoolrig_write_calibration (dir, "calib.json", 2, 0, FALSE, cameras);
  BevpoolrigConfig c = bevpoolrig_small_config;
  gchar *caps, *text;

  c.cameras = 3;
  caps = bevpoolrig_caps (&c, BEVPOOLRIG_DEPTH_BINS, FALSE);
  text = negotiation_error (path, caps, GST_CORE_ERROR,
      GST_CORE_ERROR_NEGOTIATION);
  fail_unless (strstr (text, "cameras=3") && strstr (text, "2 cameras"),
      "%s", text);
  g_free (text);
  g_free (caps);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_depth_bins_mismatch_is_an_error)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path =
      bevpoolrig_write_calibration (dir, "calib.json", 2, 0, FALSE, cameras);
  gchar *caps =
      bevpoolrig_caps (&bevpoolrig_small_config, BEVPOOLRIG_DEPTH_BINS - 1,
      FALSE), *text;

  text = negotiation_error (path, caps, GST_CORE_ERROR,
      GST_CORE_ERROR_NEGOTIATION);
  fail_unless (strstr (text, "depth-bins=7") && strstr (text, "8 bins"),
      "%s", text);
  g_free (text);
  g_free (caps);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* A singular intrinsics matrix: the error names the camera and the
 * matrix, so that a user of six cameras knows which one to fix. */
GST_START_TEST (test_singular_intrinsics_is_an_error)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *json, *path, *caps, *text;

  bevpoolrig_cameras (2, 0, cameras);
  /* the second camera's focal lengths are zero */
  cameras[1].intrinsics[0] = 0.0;
  cameras[1].intrinsics[5] = 0.0;
  json = bevpoolrig_calibration_json (cameras, 2, FALSE);
  path = elemtest_write_file (dir, "singular.json", json);
  caps =
      bevpoolrig_caps (&bevpoolrig_small_config, BEVPOOLRIG_DEPTH_BINS, FALSE);
  text = negotiation_error (path, caps, GST_STREAM_ERROR,
      GST_STREAM_ERROR_DECODE);
  fail_unless (strstr (text, "intrinsics") != NULL,
      "the error does not " "name the matrix: %s", text);
  fail_unless (strstr (text, "cam1") != NULL,
      "the error does not name the " "camera (cam1): %s", text);
  g_free (text);
  g_free (caps);
  g_free (json);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_wrong_buffer_size_is_an_error)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path =
      bevpoolrig_write_calibration (dir, "calib.json", 2, 0, FALSE, cameras);
  GstHarness *h =
      bevpool_harness (&bevpoolrig_small_config, path, BEVPOOLRIG_DEPTH_BINS,
      FALSE,
      "application/x-bev-features");
  GstBus *bus = gst_bus_new ();
  gchar *tensor, *required, *text;
  gsize sizes[2];
  BevpoolrigFrame f;

  gst_element_set_bus (h->element, bus);
  bevpoolrig_frame_make (&f, &bevpoolrig_small_config, BEVPOOLRIG_DEPTH_BINS,
      FALSE, 800);
  /* depth for 7 bins where the caps say 8 */
  sizes[0] = f.sizes[0];
  sizes[1] = f.sizes[1] / BEVPOOLRIG_DEPTH_BINS * (BEVPOOLRIG_DEPTH_BINS - 1);
  fail_unless_equals_int (gst_harness_push (h, elemtest_tensors_buffer (2,
              (const gconstpointer *) f.tensors, sizes)), GST_FLOW_ERROR);
  tensor = g_strdup_printf ("tensor 1 is %" G_GSIZE_FORMAT " bytes", sizes[1]);
  required = g_strdup_printf ("require %" G_GSIZE_FORMAT, f.sizes[1]);
  text = elemtest_expect_error (bus, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
      tensor, required, NULL);
  g_free (text);
  g_free (tensor);
  g_free (required);
  bevpoolrig_frame_clear (&f);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* While playing, a new file of another camera count, then a missing one, a
 * deeply nested one and a device: errors at the next frame, naming what is
 * wrong. */
GST_START_TEST (test_bad_calibration_change_is_an_error)
{
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[3];
  gchar *path =
      bevpoolrig_write_calibration (dir, "two.json", 2, 0, FALSE, cameras);
  gchar *three =
      bevpoolrig_write_calibration (dir, "three.json", 3, 0, FALSE, cameras);
  gchar *missing = g_build_filename (dir, "missing.json", NULL);
  gchar *deep = g_build_filename (dir, "deep.json", NULL);
  gchar *open = g_strnfill (100000, '['), *close = g_strnfill (100000, ']');
  gchar *deep_text = g_strdup_printf ("{\"cameras\": %s%s}", open, close);
  GstHarness *h =
      bevpool_harness (&bevpoolrig_small_config, path, BEVPOOLRIG_DEPTH_BINS,
      FALSE,
      "application/x-bev-features");
  GstElement *bevpool = gst_harness_find_element (h, "bevpool");
  GstBus *bus = gst_bus_new ();
  BevpoolrigFrame f;
  gchar *text;

  gst_element_set_bus (h->element, bus);
  bevpoolrig_frame_make (&f, &bevpoolrig_small_config, BEVPOOLRIG_DEPTH_BINS,
      FALSE, 900);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));

  g_object_set (bevpool, "calibration", three, NULL);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_ERROR);
  text = elemtest_expect_error (bus, GST_CORE_ERROR,
      GST_CORE_ERROR_NEGOTIATION, "3 cameras", "2", NULL);
  g_free (text);

  g_object_set (bevpool, "calibration", missing, NULL);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_ERROR);
  text = elemtest_expect_error (bus, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_NOT_FOUND, missing, NULL);
  g_free (text);

  /* nested 100 000 levels deep: it overflowed the streaming thread's stack
   * in json-glib (issue 32.1) */
  fail_unless (g_file_set_contents (deep, deep_text, -1, NULL));
  g_object_set (bevpool, "calibration", deep, NULL);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_ERROR);
  text = elemtest_expect_error (bus, GST_STREAM_ERROR,
      GST_STREAM_ERROR_DECODE, deep, "nested more than 64 levels deep", NULL);
  g_free (text);

  /* not a regular file: /dev/zero was read for ever (issue 32.3) */
  g_object_set (bevpool, "calibration", "/dev/zero", NULL);
  fail_unless_equals_int (gst_harness_push (h, bevpoolrig_frame_buffer (&f)),
      GST_FLOW_ERROR);
  text = elemtest_expect_error (bus, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_OPEN_READ, "/dev/zero", "not a regular file", NULL);
  g_free (text);

  bevpoolrig_frame_clear (&f);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_object_unref (bevpool);
  gst_harness_teardown (h);
  g_free (path);
  g_free (three);
  g_free (missing);
  g_free (deep);
  g_free (deep_text);
  g_free (open);
  g_free (close);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* backend=cuda on a device that does not exist (device 0 on a machine
 * without one, the first number past the last device on a GPU machine): the
 * start fails with an error naming the device. */
GST_START_TEST (test_backend_cuda_without_device)
{
  gint missing = p3dc_cuda_device_count ();
  gchar *device = g_strdup_printf ("device %d", missing);
  gchar *dir, *path;
  P3dcCameraCalib cameras[2];
  GstElement *bevpool;
  GstBus *bus;
  gchar *text;

  dir = bevpoolrig_make_dir ();
  path = bevpoolrig_write_calibration (dir, "calib.json", 2, 0, FALSE, cameras);
  bevpool = gst_element_factory_make ("bevpool", NULL);
  bus = gst_bus_new ();
  gst_util_set_object_arg (G_OBJECT (bevpool), "backend", "cuda");
  g_object_set (bevpool, "calibration", path, "cuda-device-id", missing, NULL);
  gst_element_set_bus (bevpool, bus);
  fail_unless_equals_int (gst_element_set_state (bevpool, GST_STATE_PLAYING),
      GST_STATE_CHANGE_FAILURE);
  text = elemtest_expect_error (bus, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_NOT_FOUND, "backend=cuda", device, NULL);
  g_free (text);
  gst_element_set_state (bevpool, GST_STATE_NULL);
  gst_element_set_bus (bevpool, NULL);
  gst_object_unref (bus);
  gst_object_unref (bevpool);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
  g_free (device);
}

GST_END_TEST;

static Suite *
bevpool_suite (void)
{
  Suite *s = suite_create ("bevpool");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_rig_is_meaningful);
  tcase_add_test (tc, test_output_matches_library);
  tcase_add_test (tc, test_formats);
  tcase_add_test (tc, test_layouts);
  tcase_add_test (tc, test_z_cells_stacked);
  tcase_add_test (tc, test_cell_rounding);
  tcase_add_test (tc, test_calibration_change_while_playing);
  tcase_add_test (tc, test_geometry_kept_when_sizes_unchanged);
  tcase_add_test (tc, test_packed_record_accepted);
  tcase_add_test (tc, test_caps_image_aug);
  tcase_add_test (tc, test_no_calibration_is_an_error);
  tcase_add_test (tc, test_grid_limits);
  tcase_add_test (tc, test_unreadable_calibration_is_an_error);
  tcase_add_test (tc, test_invalid_json_is_an_error);
  tcase_add_test (tc, test_missing_key_is_an_error);
  tcase_add_test (tc, test_3x4_matrix_is_an_error);
  tcase_add_test (tc, test_cameras_mismatch_is_an_error);
  tcase_add_test (tc, test_depth_bins_mismatch_is_an_error);
  tcase_add_test (tc, test_singular_intrinsics_is_an_error);
  tcase_add_test (tc, test_wrong_buffer_size_is_an_error);
  tcase_add_test (tc, test_bad_calibration_change_is_an_error);
  tcase_add_test (tc, test_backend_cuda_without_device);
  return s;
}

P3D_CHECK_MAIN (bevpool);
