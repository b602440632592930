/* bevrender: pixels computed by hand for a point, a box, a voxel cell and
 * BEV feature cells; timestamp matching between pads; empty inputs; output
 * caps and geometry; bad caps and bad buffers; determinism.
 *
 * Most tests use the view range <0,-10,20,10> at 0.1 m per pixel: a
 * 200 x 200 image whose top edge is x = 20 m and left edge y = 10 m, so
 * that ground point (x, y) is pixel column floor ((10 - y) / 0.1), row
 * floor ((20 - x) / 0.1). Coordinates are chosen half a pixel away from
 * pixel boundaries, so float rounding cannot move them. */
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "bevrender-canvas.h"
#include "half.h"
#include "p3dperception.h"
#include "p3dtest.h"

#define VIEW "range=\"<0,-10,20,10>\" metres-per-pixel=0.1 grid-spacing=0 " \
    "annotations=false"
#define BLACK P3D_RGB (0, 0, 0)
#define MS (GST_MSECOND)

/* A pipeline: appsrcs -> bevrender -> appsink. */
typedef struct
{
  GstElement *pipeline;
  GstElement *render;
  GstElement *sink;
  GPtrArray *sources;
  GPtrArray *pads;
} Render;

static Render *
render_new (const gchar * properties)
{
  gchar *description = g_strdup_printf ("bevrender name=r %s ! "
      "appsink name=sink sync=false", properties);
  Render *render = g_new0 (Render, 1);
  GError *error = NULL;

  render->pipeline = gst_parse_launch (description, &error);
  fail_unless (render->pipeline != NULL, "'%s': %s", description,
      error ? error->message : "?");
  render->render = gst_bin_get_by_name (GST_BIN (render->pipeline), "r");
  render->sink = gst_bin_get_by_name (GST_BIN (render->pipeline), "sink");
  render->sources = g_ptr_array_new ();
  render->pads = g_ptr_array_new_with_free_func (gst_object_unref);
  g_free (description);
  return render;
}

/* An appsrc of @caps (taken) linked to bevrender's request pad @pad_name. */
static GstElement *
render_add_input (Render * render, const gchar * pad_name, GstCaps * caps)
{
  GstElement *source = gst_element_factory_make ("appsrc", NULL);
  GstPad *srcpad, *sinkpad;

  fail_unless (source != NULL);
  g_object_set (source, "format", GST_FORMAT_TIME, "caps", caps, NULL);
  gst_caps_unref (caps);
  gst_bin_add (GST_BIN (render->pipeline), source);
  sinkpad = gst_element_request_pad_simple (render->render, pad_name);
  fail_unless (sinkpad != NULL, "no pad %s", pad_name);
  fail_unless_equals_string (GST_PAD_NAME (sinkpad), pad_name);
  srcpad = gst_element_get_static_pad (source, "src");
  fail_unless_equals_int (gst_pad_link (srcpad, sinkpad), GST_PAD_LINK_OK);
  gst_object_unref (srcpad);
  g_ptr_array_add (render->sources, source);
  g_ptr_array_add (render->pads, sinkpad);
  return source;
}

static GstElement *
render_add_input_str (Render * render, const gchar * pad_name,
    const gchar * caps)
{
  return render_add_input (render, pad_name, gst_caps_from_string (caps));
}

static void
render_free (Render * render)
{
  gst_element_set_state (render->pipeline, GST_STATE_NULL);
  g_ptr_array_unref (render->pads);
  g_ptr_array_unref (render->sources);
  gst_object_unref (render->render);
  gst_object_unref (render->sink);
  gst_object_unref (render->pipeline);
  g_free (render);
}

static void
render_start (Render * render)
{
  fail_unless (gst_element_set_state (render->pipeline, GST_STATE_PLAYING)
      != GST_STATE_CHANGE_FAILURE);
}

static void
push (GstElement * source, GstBuffer * buffer)
{
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (source),
          buffer), GST_FLOW_OK);
}

static void
end_inputs (Render * render)
{
  guint i;

  for (i = 0; i < render->sources->len; i++)
    gst_app_src_end_of_stream (GST_APP_SRC (g_ptr_array_index
            (render->sources, i)));
}

/* Every frame until EOS; the text of the first error in @error_text (or
 * fails on an error when @error_text is NULL). */
static GPtrArray *
render_collect (Render * render, gchar ** error_text)
{
  GPtrArray *samples = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_sample_unref);
  GstBus *bus = gst_element_get_bus (render->pipeline);
  GstMessage *message;
  GstSample *sample;

  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (render->sink))))
    g_ptr_array_add (samples, sample);
  message = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  if (error_text != NULL)
    *error_text = NULL;
  if (message != NULL) {
    GError *error = NULL;
    gchar *debug = NULL;

    gst_message_parse_error (message, &error, &debug);
    if (error_text == NULL)
      fail ("error: %s (%s)", error->message, GST_STR_NULL (debug));
    *error_text = g_strdup_printf ("%s (%s)", error->message,
        GST_STR_NULL (debug));
    g_error_free (error);
    g_free (debug);
    gst_message_unref (message);
  }
  gst_object_unref (bus);
  return samples;
}

/* Runs a pipeline of one input with one buffer; its frames. */
static GPtrArray *
render_one (const gchar * properties, const gchar * pad_name, GstCaps * caps,
    GstBuffer * buffer)
{
  Render *render = render_new (properties);
  GstElement *source = render_add_input (render, pad_name, caps);
  GPtrArray *samples;

  render_start (render);
  push (source, buffer);
  end_inputs (render);
  samples = render_collect (render, NULL);
  render_free (render);
  return samples;
}

/* Pixels of a frame. */

typedef struct
{
  GstVideoInfo info;
  GstMapInfo map;
  GstBuffer *buffer;
} Frame;

static void
frame_map (Frame * frame, GstSample * sample)
{
  fail_unless (gst_video_info_from_caps (&frame->info,
          gst_sample_get_caps (sample)));
  frame->buffer = gst_sample_get_buffer (sample);
  fail_unless (gst_buffer_map (frame->buffer, &frame->map, GST_MAP_READ));
}

static void
frame_unmap (Frame * frame)
{
  gst_buffer_unmap (frame->buffer, &frame->map);
}

static P3dColor
frame_pixel (Frame * frame, gint column, gint row)
{
  const guint8 *p;

  fail_unless (column >= 0 && column < GST_VIDEO_INFO_WIDTH (&frame->info)
      && row >= 0 && row < GST_VIDEO_INFO_HEIGHT (&frame->info));
  p = frame->map.data + (gsize) row *GST_VIDEO_INFO_PLANE_STRIDE
      (&frame->info, 0) + (gsize) column *4;
  return ((guint32) p[3] << 24) | ((guint32) p[0] << 16) |
      ((guint32) p[1] << 8) | p[2];
}

static guint
frame_count_other (Frame * frame, P3dColor background)
{
  gint row, column;
  guint count = 0;

  for (row = 0; row < GST_VIDEO_INFO_HEIGHT (&frame->info); row++)
    for (column = 0; column < GST_VIDEO_INFO_WIDTH (&frame->info); column++)
      if (frame_pixel (frame, column, row) != background)
        count++;
  return count;
}

static guint
brightness (P3dColor color)
{
  return ((color >> 16) & 0xff) + ((color >> 8) & 0xff) + (color & 0xff);
}

#define assert_pixel(frame, column, row, expected) \
  G_STMT_START { \
    P3dColor _actual = frame_pixel ((frame), (column), (row)); \
    fail_unless (_actual == (expected), "pixel (column %d, row %d) is " \
        "0x%08x, expected 0x%08x", (column), (row), _actual, (expected)); \
  } G_STMT_END

#define assert_pixel_not(frame, column, row, unexpected) \
  G_STMT_START { \
    P3dColor _actual = frame_pixel ((frame), (column), (row)); \
    fail_unless (_actual != (unexpected), "pixel (column %d, row %d) is " \
        "0x%08x, expected another colour", (column), (row), _actual); \
  } G_STMT_END

static GstSample *
sample_at (GPtrArray * samples, guint index)
{
  fail_unless (index < samples->len, "frame %u of %u", index, samples->len);
  return g_ptr_array_index (samples, index);
}

/* Input buffers. */

static GstBuffer *
points_buffer (const gfloat * points, guint n_points, guint channels,
    GstClockTime pts)
{
  gsize size = (gsize) n_points * channels * sizeof (gfloat);
  GstBuffer *buffer = size ? gst_buffer_new_memdup (points, size) :
      gst_buffer_new ();

  GST_BUFFER_PTS (buffer) = pts;
  return buffer;
}

/* One point at (@x, @y), z -1, intensity 0.5. */
static GstBuffer *
point_at (gfloat x, gfloat y, GstClockTime pts)
{
  const gfloat point[4] = { x, y, -1.0f, 0.5f };

  return points_buffer (point, 1, 4, pts);
}

static GstBuffer *
boxes_buffer (const P3dcBox3d * boxes, guint count, guint max_boxes,
    GstClockTime pts)
{
  GstBuffer *buffer = gst_buffer_new ();
  guint8 *records = g_malloc0 ((gsize) max_boxes * sizeof (P3dcBox3d));
  guint32 *count_data = g_new (guint32, 1);

  *count_data = count;
  if (count > 0)
    memcpy (records, boxes, (gsize) count * sizeof (P3dcBox3d));
  gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, records,
          (gsize) max_boxes * sizeof (P3dcBox3d), 0,
          (gsize) max_boxes * sizeof (P3dcBox3d), records, g_free));
  gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, count_data,
          4, 0, 4, count_data, g_free));
  GST_BUFFER_PTS (buffer) = pts;
  return buffer;
}

static GstCaps *
boxes_caps (guint max_boxes)
{
  return gst_caps_new_simple ("application/x-boxes3d", "max-boxes",
      G_TYPE_INT, (gint) max_boxes, NULL);
}

static P3dcBox3d
make_box (gfloat x, gfloat y, gfloat dx, gfloat dy, gfloat yaw, gfloat score,
    gint32 label)
{
  P3dcBox3d box = { x, y, -1.0f, dx, dy, 1.5f, yaw, score, label };

  return box;
}

/* A buffer of @n_tensors zeroed tensors sized by @layout. */
static GstBuffer *
zero_buffer (const P3dTensorLayout * layout, guint8 ** tensors)
{
  GstBuffer *buffer = gst_buffer_new ();
  guint i;

  for (i = 0; i < layout->n_tensors; i++) {
    tensors[i] = g_malloc0 (layout->size[i]);
    gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, tensors[i],
            layout->size[i], 0, layout->size[i], tensors[i], g_free));
  }
  return buffer;
}

static const gdouble test_voxel_size[3] = { 0.2, 0.2, 4.0 };
static const gdouble test_range[6] = { 0.0, -10.0, -3.0, 20.0, 10.0, 1.0 };

static void
set_coords (guint8 * coords, guint index, gint32 y, gint32 x)
{
  const gint32 c[4] = { 0, 0, y, x };

  memcpy (coords + (gsize) index * 16, c, sizeof (c));
}

/* Tests. */

/* The output of the test view: 200 x 200 RGBA at 10/1 (no input rate). */
GST_START_TEST (test_single_point)
{
  GPtrArray *samples = render_one (VIEW, "points_0",
      gst_caps_from_string ("application/x-point-cloud, format=xyzi"),
      point_at (12.05f, 3.05f, 0));
  GstStructure *s;
  gint fps_n, fps_d;
  Frame frame;

  fail_unless_equals_int (samples->len, 1);
  s = gst_caps_get_structure (gst_sample_get_caps (sample_at (samples, 0)), 0);
  fail_unless_equals_string (gst_structure_get_string (s, "format"), "RGBA");
  fail_unless (gst_structure_get_fraction (s, "framerate", &fps_n, &fps_d));
  fail_unless_equals_int (fps_n, 10);
  fail_unless_equals_int (fps_d, 1);
  frame_map (&frame, sample_at (samples, 0));
  fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&frame.info), 200);
  fail_unless_equals_int (GST_VIDEO_INFO_HEIGHT (&frame.info), 200);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (frame.buffer), 0);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (frame.buffer), 100 * MS);
  /* column floor ((10 - 3.05) / 0.1) = 69, row floor ((20 - 12.05) / 0.1)
   * = 79; z = -1 is half way up the default height-range <-3,1> */
  assert_pixel (&frame, 69, 79,
      p3d_bev_color_map (P3D_BEV_COLOR_MAP_RAINBOW, 0.5));
  fail_unless_equals_int (frame_count_other (&frame, BLACK), 1);
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
}

GST_END_TEST;

GST_START_TEST (test_point_size)
{
  GPtrArray *samples = render_one (VIEW " point-size=3", "points_0",
      gst_caps_from_string ("application/x-point-cloud, format=xyzi"),
      point_at (12.05f, 3.05f, 0));
  P3dColor color = p3d_bev_color_map (P3D_BEV_COLOR_MAP_RAINBOW, 0.5);
  Frame frame;
  gint row, column;

  frame_map (&frame, sample_at (samples, 0));
  for (row = 78; row <= 80; row++)
    for (column = 68; column <= 70; column++)
      assert_pixel (&frame, column, row, color);
  fail_unless_equals_int (frame_count_other (&frame, BLACK), 9);
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
}

GST_END_TEST;

/* color-by: height through height-range, intensity through
 * intensity-range, height again for points without intensity. */
GST_START_TEST (test_color_by)
{
  static const struct
  {
    const gchar *properties;
    const gchar *format;
    gdouble t;
  } cases[] = {
    {"height-range=\"<-2,0>\"", "xyzi", 0.5},
    {"height-range=\"<-1,3>\"", "xyzi", 0.0},
    {"color-by=intensity", "xyzi", 0.25},
    {"color-by=intensity intensity-range=\"<0,0.25>\"", "xyzi", 1.0},
    {"color-by=intensity", "xyz", 0.5},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    /* z -1, intensity 0.25 */
    const gfloat point[4] = { 12.05f, 3.05f, -1.0f, 0.25f };
    gchar *properties = g_strdup_printf (VIEW " %s", cases[i].properties);
    gchar *caps = g_strdup_printf ("application/x-point-cloud, format=%s",
        cases[i].format);
    guint channels = strlen (cases[i].format);
    GPtrArray *samples = render_one (properties, "points_0",
        gst_caps_from_string (caps), points_buffer (point, 1, channels, 0));
    Frame frame;

    frame_map (&frame, sample_at (samples, 0));
    assert_pixel (&frame, 69, 79,
        p3d_bev_color_map (P3D_BEV_COLOR_MAP_RAINBOW, cases[i].t));
    frame_unmap (&frame);
    g_ptr_array_unref (samples);
    g_free (properties);
    g_free (caps);
  }
}

GST_END_TEST;

/* A 4 m x 2 m box centred at (10.05, 0.05): front edge x = 12.05 (row 79),
 * back edge x = 8.05 (row 119), left edge y = 1.05 (column 89), right edge
 * y = -0.95 (column 109), centre pixel (99, 99). */
GST_START_TEST (test_box_yaw_zero)
{
  P3dcBox3d box = make_box (10.05f, 0.05f, 4.0f, 2.0f, 0.0f, 0.87f, 0);
  P3dColor color = p3d_color_for_label (0);
  GPtrArray *samples = render_one (VIEW, "boxes_0", boxes_caps (4),
      boxes_buffer (&box, 1, 4, 0));
  Frame frame;
  gint k;

  fail_unless_equals_int (samples->len, 1);
  frame_map (&frame, sample_at (samples, 0));
  for (k = 89; k <= 109; k++) {
    assert_pixel (&frame, k, 79, color);        /* front */
    assert_pixel (&frame, k, 119, color);       /* back */
  }
  for (k = 79; k <= 119; k++) {
    assert_pixel (&frame, 89, k, color);        /* left */
    assert_pixel (&frame, 109, k, color);       /* right */
  }
  /* the heading mark: centre to front, nothing behind the centre */
  for (k = 80; k <= 99; k++)
    assert_pixel (&frame, 99, k, color);
  for (k = 100; k <= 118; k++)
    assert_pixel (&frame, 99, k, BLACK);
  assert_pixel (&frame, 95, 90, BLACK);
  assert_pixel (&frame, 88, 99, BLACK);
  assert_pixel (&frame, 110, 99, BLACK);
  /* the score "0.87" starts two pixels right of the box, at its top row:
   * the top row of a '0' is its three middle columns */
  assert_pixel (&frame, 111, 79, BLACK);
  assert_pixel (&frame, 112, 79, color);
  assert_pixel (&frame, 114, 79, color);
  assert_pixel (&frame, 115, 79, BLACK);
  frame_unmap (&frame);
  g_ptr_array_unref (samples);

  /* without the score: nothing right of the box */
  samples = render_one (VIEW " show-scores=false", "boxes_0", boxes_caps (4),
      boxes_buffer (&box, 1, 4, 0));
  frame_map (&frame, sample_at (samples, 0));
  /* 4 edges of 21 x 41 pixels and the 20 pixels of the heading mark */
  fail_unless_equals_int (frame_count_other (&frame, BLACK),
      2 * 21 + 2 * 39 + 20);
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
}

GST_END_TEST;

/* The same box turned by yaw = pi/2 faces +y, left in the image: its front
 * edge is column 79, its back edge column 119, its sides rows 89 and 109.
 * A second box, label 1, is drawn in another colour. */
GST_START_TEST (test_box_yaw_quarter)
{
  P3dcBox3d boxes[2] = {
    make_box (10.05f, 0.05f, 4.0f, 2.0f, (gfloat) G_PI_2, 0.5f, 0),
    make_box (15.05f, -5.05f, 1.0f, 1.0f, 0.0f, 0.5f, 1),
  };
  P3dColor color = p3d_color_for_label (0);
  GPtrArray *samples = render_one (VIEW " show-scores=false", "boxes_0",
      boxes_caps (4), boxes_buffer (boxes, 2, 4, 0));
  Frame frame;
  gint k;

  frame_map (&frame, sample_at (samples, 0));
  for (k = 89; k <= 109; k++) {
    assert_pixel (&frame, 79, k, color);        /* front */
    assert_pixel (&frame, 119, k, color);       /* back */
  }
  for (k = 80; k <= 99; k++)
    assert_pixel (&frame, k, 99, color);        /* heading, to the left */
  for (k = 100; k <= 118; k++)
    assert_pixel (&frame, k, 99, BLACK);
  /* the second box: centre (column 150, row 49), edges 5 pixels away */
  fail_unless (p3d_color_for_label (1) != color);
  assert_pixel (&frame, 145, 49, p3d_color_for_label (1));
  assert_pixel (&frame, 150, 44, p3d_color_for_label (1));
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
}

GST_END_TEST;

/* Voxel (y 30, x 40) of a 0.2 m grid from (0, -10) covers x [8, 8.2),
 * y [-4, -3.8): the pixels whose centres are inside are rows 118-119,
 * columns 138-139. A voxel without points and one beyond the count are not
 * drawn. */
GST_START_TEST (test_voxel_cell)
{
  P3dVoxelsInfo info;
  P3dTensorLayout layout;
  GstBuffer *buffer;
  GPtrArray *samples;
  guint8 *tensors[4];
  guint32 one = 1, count = 2;
  P3dColor color;
  Frame frame;
  gint row, column;

  p3d_voxels_info_init (&info);
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 8, 4,
          test_voxel_size, test_range));
  p3d_voxels_info_get_layout (&info, &layout);
  buffer = zero_buffer (&layout, tensors);
  set_coords (tensors[P3D_VOXELS_TENSOR_COORDS], 0, 30, 40);
  memcpy (tensors[P3D_VOXELS_TENSOR_NUM_POINTS], &one, 4);
  set_coords (tensors[P3D_VOXELS_TENSOR_COORDS], 1, 50, 50);    /* 0 points */
  set_coords (tensors[P3D_VOXELS_TENSOR_COORDS], 2, 70, 70);    /* beyond */
  memcpy (tensors[P3D_VOXELS_TENSOR_NUM_POINTS] + 8, &one, 4);
  memcpy (tensors[P3D_VOXELS_TENSOR_COUNT], &count, 4);
  GST_BUFFER_PTS (buffer) = 0;

  samples = render_one (VIEW, "voxels_0", p3d_voxels_info_to_caps (&info),
      buffer);
  frame_map (&frame, sample_at (samples, 0));
  color = frame_pixel (&frame, 138, 118);
  fail_unless (color != BLACK);
  for (row = 118; row <= 119; row++)
    for (column = 138; column <= 139; column++)
      assert_pixel (&frame, column, row, color);
  fail_unless_equals_int (frame_count_other (&frame, BLACK), 4);
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
}

GST_END_TEST;

/* Pillar features: every pillar below the count is filled. */
GST_START_TEST (test_pillar_cells)
{
  P3dVoxelsInfo voxels;
  P3dPillarsInfo info;
  P3dTensorLayout layout;
  GstBuffer *buffer;
  GPtrArray *samples;
  guint8 *tensors[3];
  guint32 count = 2;
  Frame frame;

  p3d_voxels_info_init (&voxels);
  fail_unless (p3d_voxels_info_set (&voxels, P3D_POINT_FORMAT_XYZI, 8, 4,
          test_voxel_size, test_range));
  p3d_pillars_info_init (&info);
  fail_unless (p3d_pillars_info_set (&info, P3D_DATA_FORMAT_F32,
          P3D_FEATURE_SET_POINTPILLARS_10, &voxels));
  p3d_pillars_info_get_layout (&info, &layout);
  buffer = zero_buffer (&layout, tensors);
  set_coords (tensors[P3D_PILLARS_TENSOR_COORDS], 0, 30, 40);
  set_coords (tensors[P3D_PILLARS_TENSOR_COORDS], 1, 0, 0);
  set_coords (tensors[P3D_PILLARS_TENSOR_COORDS], 2, 70, 70);   /* beyond */
  memcpy (tensors[P3D_PILLARS_TENSOR_COUNT], &count, 4);
  GST_BUFFER_PTS (buffer) = 0;

  samples = render_one (VIEW, "voxels_0", p3d_pillars_info_to_caps (&info),
      buffer);
  frame_map (&frame, sample_at (samples, 0));
  /* cell (0, 0): x [0, 0.2), y [-10, -9.8): rows 198-199, columns
   * 198-199 */
  assert_pixel_not (&frame, 138, 118, BLACK);
  assert_pixel_not (&frame, 199, 199, BLACK);
  assert_pixel_not (&frame, 198, 198, BLACK);
  fail_unless_equals_int (frame_count_other (&frame, BLACK), 8);
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
}

GST_END_TEST;

/* Voxels whose coordinates lie off the caps' 100 x 100 x 1 grid (issue
 * 11: x -5, y 1e6, z 9, and each bound just past): dropped, not drawn,
 * nothing read or written for them (valgrind runs this test), for voxels
 * and pillar features alike; only the one voxel on the grid, cell (y 30,
 * x 40), is drawn, as in test_voxel_cell. */
GST_START_TEST (test_voxels_outside_grid)
{
  static const gint32 bad[][3] = {
    /* z, y, x */
    {0, 0, -5}, {0, 1000000, 0}, {9, 50, 50}, {1, 50, 50}, {-1, 50, 50},
    {0, 100, 50}, {0, 50, 100}, {0, -1, 50}, {G_MININT32, G_MAXINT32,
        G_MININT32}, {0, G_MAXINT32, G_MAXINT32}
  };
  guint n_bad = G_N_ELEMENTS (bad), pillars;

  for (pillars = 0; pillars < 2; pillars++) {
    P3dVoxelsInfo voxels;
    P3dPillarsInfo info;
    P3dTensorLayout layout;
    GstBuffer *buffer;
    GstCaps *caps;
    GPtrArray *samples;
    guint8 *tensors[4], *coords;
    guint32 count = n_bad + 1, one = 1;
    P3dColor color;
    Frame frame;
    gint row, column;
    guint i;

    p3d_voxels_info_init (&voxels);
    fail_unless (p3d_voxels_info_set (&voxels, P3D_POINT_FORMAT_XYZI, 16, 4,
            test_voxel_size, test_range));
    if (pillars) {
      p3d_pillars_info_init (&info);
      fail_unless (p3d_pillars_info_set (&info, P3D_DATA_FORMAT_F32,
              P3D_FEATURE_SET_POINTPILLARS_10, &voxels));
      p3d_pillars_info_get_layout (&info, &layout);
      caps = p3d_pillars_info_to_caps (&info);
    } else {
      p3d_voxels_info_get_layout (&voxels, &layout);
      caps = p3d_voxels_info_to_caps (&voxels);
    }
    buffer = zero_buffer (&layout, tensors);
    coords = tensors[pillars ? P3D_PILLARS_TENSOR_COORDS :
        P3D_VOXELS_TENSOR_COORDS];
    for (i = 0; i < n_bad; i++) {
      const gint32 c[4] = { 0, bad[i][0], bad[i][1], bad[i][2] };

      memcpy (coords + (gsize) i * 16, c, sizeof (c));
      if (!pillars)
        memcpy (tensors[P3D_VOXELS_TENSOR_NUM_POINTS] + i * 4, &one, 4);
    }
    set_coords (coords, n_bad, 30, 40);
    if (!pillars)
      memcpy (tensors[P3D_VOXELS_TENSOR_NUM_POINTS] + n_bad * 4, &one, 4);
    memcpy (tensors[pillars ? P3D_PILLARS_TENSOR_COUNT :
            P3D_VOXELS_TENSOR_COUNT], &count, 4);
    GST_BUFFER_PTS (buffer) = 0;

    samples = render_one (VIEW, "voxels_0", caps, buffer);
    fail_unless_equals_int (samples->len, 1);
    frame_map (&frame, sample_at (samples, 0));
    color = frame_pixel (&frame, 138, 118);
    fail_unless (color != BLACK);
    for (row = 118; row <= 119; row++)
      for (column = 138; column <= 139; column++)
        assert_pixel (&frame, column, row, color);
    fail_unless_equals_int (frame_count_other (&frame, BLACK), 4);
    frame_unmap (&frame);
    g_ptr_array_unref (samples);
  }
}

GST_END_TEST;

/* A voxels buffer at @pts with @n_off voxels off the test grid (x -5, y
 * 1e6 and z 9 in turn) and one on it. */
static GstBuffer *
off_grid_buffer (const P3dVoxelsInfo * info, guint n_off, GstClockTime pts)
{
  P3dTensorLayout layout;
  GstBuffer *buffer;
  guint8 *tensors[4];
  guint32 one = 1, count = n_off + 1;
  guint i;

  p3d_voxels_info_get_layout (info, &layout);
  buffer = zero_buffer (&layout, tensors);
  for (i = 0; i < n_off; i++) {
    const gint32 c[4] = { 0, i % 3 == 2 ? 9 : 0, i % 3 == 1 ? 1000000 : 0,
      i % 3 == 0 ? -5 : 0
    };

    memcpy (tensors[P3D_VOXELS_TENSOR_COORDS] + (gsize) i * 16, c, 16);
  }
  set_coords (tensors[P3D_VOXELS_TENSOR_COORDS], n_off, 30, 40);
  for (i = 0; i <= n_off; i++)
    memcpy (tensors[P3D_VOXELS_TENSOR_NUM_POINTS] + i * 4, &one, 4);
  memcpy (tensors[P3D_VOXELS_TENSOR_COUNT], &count, 4);
  GST_BUFFER_PTS (buffer) = pts;
  return buffer;
}

/* The off-grid voxels are readable in voxels-off-grid, each buffer counted
 * once although it is drawn in every frame until a newer one comes (7 in
 * the buffer at 0 drawn in frames 0-2, then 3 or none in the one at
 * 300 ms), and the first ones post one warning with their number and
 * pad. */
GST_START_TEST (test_voxels_off_grid_counted)
{
  P3dVoxelsInfo info;
  guint run;

  p3d_voxels_info_init (&info);
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 16, 4,
          test_voxel_size, test_range));
  for (run = 0; run < 2; run++) {
    Render *render = render_new (VIEW);
    GstElement *voxels = render_add_input (render, "voxels_0",
        p3d_voxels_info_to_caps (&info));
    GstBus *bus = gst_element_get_bus (render->pipeline);
    GstMessage *message;
    GPtrArray *samples;
    GstSample *sample;
    GError *error = NULL;
    guint64 off_grid = G_MAXUINT64;
    guint warnings = 0;

    g_object_get (render->render, "voxels-off-grid", &off_grid, NULL);
    fail_unless_equals_uint64 (off_grid, 0);
    render_start (render);
    push (voxels, off_grid_buffer (&info, 7, 0));
    push (voxels, off_grid_buffer (&info, run == 0 ? 3 : 0, 300 * MS));
    end_inputs (render);
    /* not render_collect (): popping its error would drop the warnings */
    samples = g_ptr_array_new_with_free_func ((GDestroyNotify)
        gst_sample_unref);
    while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (render->sink))))
      g_ptr_array_add (samples, sample);
    fail_unless_equals_int (samples->len, 4);
    g_object_get (render->render, "voxels-off-grid", &off_grid, NULL);
    fail_unless_equals_uint64 (off_grid, run == 0 ? 10 : 7);

    while ((message = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING |
                GST_MESSAGE_ERROR))) {
      fail_if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR);
      gst_message_parse_warning (message, &error, NULL);
      fail_unless (g_error_matches (error, GST_STREAM_ERROR,
              GST_STREAM_ERROR_FORMAT), "%s", error->message);
      fail_unless_equals_string (error->message, "7 voxels on pad voxels_0 "
          "lie outside the 100 x 100 x 1 grid of their caps and were not "
          "drawn");
      g_clear_error (&error);
      gst_message_unref (message);
      warnings++;
    }
    fail_unless_equals_int (warnings, 1);
    gst_object_unref (bus);
    g_ptr_array_unref (samples);
    render_free (render);
  }
}

GST_END_TEST;

/* 2 channels on a 4 x 4 grid of 5 m cells over the test range, cell
 * magnitudes 1, 2.5 and 4 at x [5, 10) and y [-10, -5), [-5, 0), [0, 5):
 * brighter as larger, 4 at the top of the heat map, zero cells not drawn.
 * F32 and F16, layouts yx and xy, give the same image. */
static GstBuffer *
features_buffer (const P3dBevFeaturesInfo * info)
{
  /* (x cell, y cell, value of channel 0, value of channel 1) */
  static const gfloat cells[3][4] = {
    {1, 0, 0.6f, 0.8f}, {1, 1, 1.5f, 2.0f}, {1, 2, 0.0f, 4.0f},
  };
  P3dTensorLayout layout;
  GstBuffer *buffer;
  guint8 *tensors[1];
  guint i, c;

  fail_unless (p3d_bev_features_info_get_layout (info, &layout));
  buffer = zero_buffer (&layout, tensors);
  for (i = 0; i < 3; i++) {
    guint ix = (guint) cells[i][0], iy = (guint) cells[i][1];
    gsize cell = info->layout == P3D_BEV_FEATURES_LAYOUT_XY ?
        ix * info->width + iy : iy * info->width + ix;

    for (c = 0; c < 2; c++) {
      gsize index = c * (gsize) info->width * info->height + cell;

      if (info->format == P3D_DATA_FORMAT_F16) {
        guint16 half = p3dc_float_to_half (cells[i][2 + c]);

        memcpy (tensors[0] + index * 2, &half, 2);
      } else {
        memcpy (tensors[0] + index * 4, &cells[i][2 + c], 4);
      }
    }
  }
  GST_BUFFER_PTS (buffer) = 0;
  return buffer;
}

GST_START_TEST (test_features_heat_map)
{
  guint variant;
  GBytes *first = NULL;

  for (variant = 0; variant < 4; variant++) {
    P3dBevFeaturesInfo info;
    GPtrArray *samples;
    Frame frame;
    P3dColor one, two, four;    /* magnitudes 1, 2.5, 4 */

    p3d_bev_features_info_init (&info);
    info.format = variant & 1 ? P3D_DATA_FORMAT_F16 : P3D_DATA_FORMAT_F32;
    info.layout = variant & 2 ? P3D_BEV_FEATURES_LAYOUT_XY :
        P3D_BEV_FEATURES_LAYOUT_YX;
    info.channels = 2;
    info.width = 4;
    info.height = 4;
    info.has_range = TRUE;
    memcpy (info.range, test_range, sizeof (info.range));
    samples = render_one (VIEW, "features_0",
        p3d_bev_features_info_to_caps (&info), features_buffer (&info));
    frame_map (&frame, sample_at (samples, 0));
    /* cell centres: x 7.5 is row 125; y -7.5, -2.5, 2.5 are columns 175,
     * 125, 75 */
    one = frame_pixel (&frame, 175, 125);
    two = frame_pixel (&frame, 125, 125);
    four = frame_pixel (&frame, 75, 125);
    fail_unless (brightness (one) < brightness (two)
        && brightness (two) < brightness (four),
        "variant %u: magnitudes 1, 2.5, 4 coloured 0x%08x 0x%08x 0x%08x",
        variant, one, two, four);
    fail_unless_equals_int (one, p3d_bev_color_map (P3D_BEV_COLOR_MAP_HEAT,
            0.25));
    fail_unless_equals_int (two, p3d_bev_color_map (P3D_BEV_COLOR_MAP_HEAT,
            0.625));
    fail_unless_equals_int (four, p3d_bev_color_map (P3D_BEV_COLOR_MAP_HEAT,
            1.0));
    /* a cell is 50 x 50 pixels: three cells */
    fail_unless_equals_int (frame_count_other (&frame, BLACK), 3 * 2500);
    if (first == NULL) {
      first = g_bytes_new (frame.map.data, frame.map.size);
    } else {
      gsize size;
      const guint8 *expected = g_bytes_get_data (first, &size);

      fail_unless (size == frame.map.size
          && memcmp (expected, frame.map.data, size) == 0,
          "variant %u draws another image", variant);
    }
    frame_unmap (&frame);
    g_ptr_array_unref (samples);
  }
  g_bytes_unref (first);
}

GST_END_TEST;

/* Layers: features under voxels under points under boxes. */
GST_START_TEST (test_layer_order)
{
  P3dBevFeaturesInfo features;
  P3dVoxelsInfo voxels;
  P3dTensorLayout layout;
  P3dcBox3d box = make_box (8.65f, -3.85f, 1.0f, 4.0f, 0.0f, 0.5f, 2);
  Render *render = render_new (VIEW " show-scores=false");
  GstElement *sources[4];
  GstBuffer *voxel_buffer;
  guint8 *tensors[4];
  guint32 one = 1;
  GPtrArray *samples;
  Frame frame;
  P3dColor occupancy;

  p3d_bev_features_info_init (&features);
  features.format = P3D_DATA_FORMAT_F32;
  features.channels = 2;
  features.width = 4;
  features.height = 4;
  features.has_range = TRUE;
  memcpy (features.range, test_range, sizeof (features.range));
  p3d_voxels_info_init (&voxels);
  fail_unless (p3d_voxels_info_set (&voxels, P3D_POINT_FORMAT_XYZI, 8, 4,
          test_voxel_size, test_range));
  p3d_voxels_info_get_layout (&voxels, &layout);
  voxel_buffer = zero_buffer (&layout, tensors);
  set_coords (tensors[P3D_VOXELS_TENSOR_COORDS], 0, 30, 40);
  memcpy (tensors[P3D_VOXELS_TENSOR_NUM_POINTS], &one, 4);
  memcpy (tensors[P3D_VOXELS_TENSOR_COUNT], &one, 4);
  GST_BUFFER_PTS (voxel_buffer) = 0;

  /* requested top layer first, so that pad order is not layer order */
  sources[0] = render_add_input (render, "boxes_0", boxes_caps (4));
  sources[1] = render_add_input_str (render, "points_0",
      "application/x-point-cloud, format=xyzi");
  sources[2] = render_add_input (render, "voxels_0",
      p3d_voxels_info_to_caps (&voxels));
  sources[3] = render_add_input (render, "features_0",
      p3d_bev_features_info_to_caps (&features));
  render_start (render);
  /* the box's back edge is row 118 (x = 8.65 - 0.5), columns 118-158, the
   * point at (column 139, row 119), both on the voxel cell (rows 118-119,
   * columns 138-139), in the feature cell of magnitude 2.5 */
  push (sources[0], boxes_buffer (&box, 1, 4, 0));
  push (sources[1], point_at (8.05f, -3.95f, 0));
  push (sources[2], voxel_buffer);
  push (sources[3], features_buffer (&features));
  end_inputs (render);
  samples = render_collect (render, NULL);

  frame_map (&frame, sample_at (samples, 0));
  occupancy = frame_pixel (&frame, 138, 119);
  fail_unless (occupancy != BLACK && occupancy !=
      p3d_bev_color_map (P3D_BEV_COLOR_MAP_HEAT, 0.625));
  assert_pixel (&frame, 125, 125, p3d_bev_color_map (P3D_BEV_COLOR_MAP_HEAT,
          0.625));
  assert_pixel (&frame, 139, 119, p3d_bev_color_map
      (P3D_BEV_COLOR_MAP_RAINBOW, 0.5));
  assert_pixel (&frame, 138, 118, p3d_color_for_label (2));
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
  render_free (render);
}

GST_END_TEST;

/* Points at 0, 100 and 200 ms, boxes at 100 ms only: frame 0 shows the
 * first sweep and no box (the boxes start later), frames 1 and 2 show
 * their sweep and the box, kept after its frame. */
GST_START_TEST (test_timestamps_matched)
{
  P3dcBox3d box = make_box (10.05f, 0.05f, 4.0f, 2.0f, 0.0f, 0.5f, 0);
  Render *render = render_new (VIEW " show-scores=false");
  GstElement *points = render_add_input_str (render, "points_0",
      "application/x-point-cloud, format=xyzi");
  GstElement *boxes = render_add_input (render, "boxes_0", boxes_caps (4));
  /* one point per sweep, in columns 150, 160, 170 of row 19 */
  const gfloat ys[3] = { -5.05f, -6.05f, -7.05f };
  GPtrArray *samples;
  guint i, k;

  render_start (render);
  for (i = 0; i < 3; i++)
    push (points, point_at (18.05f, ys[i], i * 100 * MS));
  push (boxes, boxes_buffer (&box, 1, 4, 100 * MS));
  end_inputs (render);
  samples = render_collect (render, NULL);

  fail_unless_equals_int (samples->len, 3);
  for (i = 0; i < 3; i++) {
    Frame frame;

    frame_map (&frame, sample_at (samples, i));
    fail_unless_equals_uint64 (GST_BUFFER_PTS (frame.buffer), i * 100 * MS);
    for (k = 0; k < 3; k++) {
      P3dColor actual = frame_pixel (&frame, 150 + 10 * k, 19);

      fail_unless ((actual != BLACK) == (k == i), "frame %u: the point of "
          "sweep %u is %s", i, k, actual != BLACK ? "drawn" : "missing");
    }
    if (i == 0)
      assert_pixel (&frame, 99, 79, BLACK);
    else
      assert_pixel (&frame, 99, 79, p3d_color_for_label (0));
    frame_unmap (&frame);
  }
  g_ptr_array_unref (samples);
  render_free (render);
}

GST_END_TEST;

/* Points at 20 Hz drawn at 10/1: each frame shows the newest sweep that
 * starts before its end. */
GST_START_TEST (test_newest_buffer_wins)
{
  Render *render = render_new (VIEW);
  GstElement *points = render_add_input_str (render, "points_0",
      "application/x-point-cloud, format=xyzi");
  const gfloat ys[4] = { -5.05f, -6.05f, -7.05f, -8.05f };
  GPtrArray *samples;
  guint i;

  render_start (render);
  for (i = 0; i < 4; i++)
    push (points, point_at (18.05f, ys[i], i * 50 * MS));
  end_inputs (render);
  samples = render_collect (render, NULL);

  fail_unless_equals_int (samples->len, 2);
  for (i = 0; i < 2; i++) {
    Frame frame;

    frame_map (&frame, sample_at (samples, i));
    fail_unless_equals_int (frame_count_other (&frame, BLACK), 1);
    assert_pixel_not (&frame, 160 + 20 * i, 19, BLACK);
    frame_unmap (&frame);
  }
  g_ptr_array_unref (samples);
  render_free (render);
}

GST_END_TEST;

/* Durations in the buffers and a rate in the caps: one frame per sweep,
 * at the caps' rate. */
GST_START_TEST (test_input_framerate)
{
  Render *render = render_new (VIEW);
  GstElement *points = render_add_input_str (render, "points_0",
      "application/x-point-cloud, format=xyzi, framerate=20/1");
  GPtrArray *samples;
  GstStructure *s;
  gint fps_n, fps_d;
  guint i;

  render_start (render);
  for (i = 0; i < 5; i++) {
    GstBuffer *buffer = point_at (18.05f, -5.05f - i, i * 50 * MS);

    GST_BUFFER_DURATION (buffer) = 50 * MS;
    push (points, buffer);
  }
  end_inputs (render);
  samples = render_collect (render, NULL);
  fail_unless_equals_int (samples->len, 5);
  s = gst_caps_get_structure (gst_sample_get_caps (sample_at (samples, 0)), 0);
  fail_unless (gst_structure_get_fraction (s, "framerate", &fps_n, &fps_d));
  fail_unless_equals_int (fps_n, 20);
  fail_unless_equals_int (fps_d, 1);
  for (i = 0; i < 5; i++)
    fail_unless_equals_uint64 (GST_BUFFER_PTS (gst_sample_get_buffer
            (sample_at (samples, i))), i * 50 * MS);
  g_ptr_array_unref (samples);
  render_free (render);
}

GST_END_TEST;

/* Empty sweeps and frames without boxes: the background, in its colour. */
GST_START_TEST (test_empty_inputs)
{
  Render *render = render_new (VIEW " background-color=0x80102030");
  GstElement *points = render_add_input_str (render, "points_0",
      "application/x-point-cloud, format=xyzi");
  GstElement *boxes = render_add_input (render, "boxes_0", boxes_caps (4));
  GPtrArray *samples;
  Frame frame;

  render_start (render);
  push (points, points_buffer (NULL, 0, 4, 0));
  push (boxes, boxes_buffer (NULL, 0, 4, 0));
  end_inputs (render);
  samples = render_collect (render, NULL);
  fail_unless_equals_int (samples->len, 1);
  frame_map (&frame, sample_at (samples, 0));
  fail_unless_equals_int (frame_count_other (&frame, 0x80102030), 0);
  /* RGBA bytes */
  fail_unless_equals_int (frame.map.data[0], 0x10);
  fail_unless_equals_int (frame.map.data[1], 0x20);
  fail_unless_equals_int (frame.map.data[2], 0x30);
  fail_unless_equals_int (frame.map.data[3], 0x80);
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
  render_free (render);
}

GST_END_TEST;

/* Grid lines every 5 m; the view shifted by half a pixel so that lines
 * fall inside pixels: x = 10 is row 100, y = 0 column 99, y = 5 column
 * 49. */
GST_START_TEST (test_grid)
{
  GPtrArray *samples = render_one ("range=\"<0.05,-10.05,20.05,9.95>\" "
      "metres-per-pixel=0.1 grid-spacing=5 annotations=false", "points_0",
      gst_caps_from_string ("application/x-point-cloud, format=xyzi"),
      points_buffer (NULL, 0, 4, 0));
  P3dColor line, axis;
  Frame frame;

  frame_map (&frame, sample_at (samples, 0));
  line = frame_pixel (&frame, 10, 100);
  axis = frame_pixel (&frame, 99, 10);
  fail_unless (line != BLACK && axis != BLACK && line != axis);
  assert_pixel (&frame, 49, 10, line);
  assert_pixel (&frame, 10, 10, BLACK);
  assert_pixel (&frame, 10, 99, BLACK);
  assert_pixel (&frame, 10, 101, BLACK);
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
}

GST_END_TEST;

static void
assert_size (const gchar * properties, gint width, gint height)
{
  GPtrArray *samples = render_one (properties, "points_0",
      gst_caps_from_string ("application/x-point-cloud, format=xyz"),
      points_buffer (NULL, 0, 3, 0));
  GstVideoInfo info;

  fail_unless (gst_video_info_from_caps (&info,
          gst_sample_get_caps (sample_at (samples, 0))));
  fail_unless (info.width == width && info.height == height,
      "%s: %d x %d, expected %d x %d", properties, info.width, info.height,
      width, height);
  g_ptr_array_unref (samples);
}

/* Scale and size: one derives the other. */
GST_START_TEST (test_geometry)
{
  /* the default: the KITTI range at 0.1 m per pixel, rounded up */
  assert_size ("", 794, 692);
  assert_size ("metres-per-pixel=0.2", 397, 346);
  /* a width: the scale fits the range's y extent, the height follows */
  assert_size ("width=400", 400, 349);
  /* both: the range fits, centred */
  assert_size ("width=1000 height=1000", 1000, 1000);
  /* centred on the sensor */
  assert_size ("range=\"<50>\" metres-per-pixel=0.5", 200, 200);
  assert_size ("range=\"<50>\" metres-per-pixel=0.5 width=300", 300, 200);
}

GST_END_TEST;

/* A point at the sensor is at the image centre with range <r>. */
GST_START_TEST (test_centred_range)
{
  GPtrArray *samples = render_one ("range=\"<10>\" metres-per-pixel=0.1 "
      "grid-spacing=0", "points_0",
      gst_caps_from_string ("application/x-point-cloud, format=xyzi"),
      point_at (0.05f, 0.05f, 0));
  Frame frame;

  frame_map (&frame, sample_at (samples, 0));
  assert_pixel_not (&frame, 99, 99, BLACK);
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
}

GST_END_TEST;

GST_START_TEST (test_bad_geometry)
{
  GstElement *pipeline = gst_parse_launch ("pointcloudtestsrc num-buffers=1 "
      "! bevrender range=\"<10,0,5,10>\" ! fakesink", NULL);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *message;
  GError *error = NULL;

  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  message = gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (message != NULL);
  gst_message_parse_error (message, &error, NULL);
  fail_unless (strstr (error->message, "xmax is not above xmin") != NULL,
      "%s", error->message);
  g_error_free (error);
  gst_message_unref (message);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* With no range property the voxels' caps decide what is drawn: a grid of
 * <-20,-10,20,10> at 0.1 m per pixel is 200 x 400 pixels (x is up), not
 * the default KITTI area; the range property still wins. */
GST_START_TEST (test_range_from_caps)
{
  static const gdouble range[6] = { -20.0, -10.0, -3.0, 20.0, 10.0, 1.0 };
  const gchar *properties[2] = { "", "range=\"<0,-10,20,10>\"" };
  const gint expected[2][2] = { {200, 400}, {200, 200} };
  guint k;

  for (k = 0; k < 2; k++) {
    P3dVoxelsInfo info;
    P3dTensorLayout layout;
    GstBuffer *buffer;
    GPtrArray *samples;
    GstVideoInfo vinfo;
    guint8 *tensors[4];

    p3d_voxels_info_init (&info);
    fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 8, 4,
            test_voxel_size, range));
    p3d_voxels_info_get_layout (&info, &layout);
    buffer = zero_buffer (&layout, tensors);
    GST_BUFFER_PTS (buffer) = 0;
    samples = render_one (properties[k], "voxels_0",
        p3d_voxels_info_to_caps (&info), buffer);
    fail_unless (gst_video_info_from_caps (&vinfo,
            gst_sample_get_caps (sample_at (samples, 0))));
    fail_unless (vinfo.width == expected[k][0]
        && vinfo.height == expected[k][1], "'%s': %d x %d", properties[k],
        vinfo.width, vinfo.height);
    g_ptr_array_unref (samples);
  }
}

GST_END_TEST;

#define ANNOTATION P3D_RGB (230, 230, 230)

/* The longest run of @color in @row, and where it starts. */
static gint
longest_run (Frame * frame, gint row, P3dColor color, gint * start)
{
  gint column, run = 0, best = 0;

  for (column = 0; column < frame->info.width; column++) {
    run = frame_pixel (frame, column, row) == color ? run + 1 : 0;
    if (run > best) {
      best = run;
      *start = column - run + 1;
    }
  }
  return best;
}

/* Annotations: a scale bar of 5 m (the longest 1, 2 or 5 x 10^k metres
 * within a quarter of the 20 m wide view) is 50 pixels at 0.1 m per pixel;
 * a legend starting with the points' colour map, blue to red; the sensor's
 * arrow at the image centre for range <10>; none of them with
 * annotations=false. */
GST_START_TEST (test_annotations)
{
  const gchar *properties[2] = {
    "range=\"<10>\" metres-per-pixel=0.1 grid-spacing=0",
    "range=\"<10>\" metres-per-pixel=0.1 grid-spacing=0 annotations=false",
  };
  guint k;

  for (k = 0; k < 2; k++) {
    GPtrArray *samples = render_one (properties[k], "points_0",
        gst_caps_from_string ("application/x-point-cloud, format=xyzi"),
        points_buffer (NULL, 0, 4, 0));
    gint row, best = 0, start = 0, legend_row = -1, column;
    Frame frame;

    frame_map (&frame, sample_at (samples, 0));
    for (row = frame.info.height - 30; row < frame.info.height; row++) {
      gint row_start = 0, run = longest_run (&frame, row, ANNOTATION,
          &row_start);

      /* the bar, not the panel's frame (which is longer) */
      if (run > best && run < 60) {
        best = run;
        start = row_start;
      }
    }
    /* the legend's colour map: the first row holding both ends */
    for (row = 0; row < 30 && legend_row < 0; row++)
      for (column = 0; column < 30; column++)
        if (frame_pixel (&frame, column, row) ==
            p3d_bev_color_map (P3D_BEV_COLOR_MAP_RAINBOW, 0.0)
            && frame_pixel (&frame, column + 47, row) ==
            p3d_bev_color_map (P3D_BEV_COLOR_MAP_RAINBOW, 1.0)) {
          legend_row = row;
          break;
        }
    if (k == 0) {
      fail_unless_equals_int (best, 50);
      fail_unless (start < 20, "scale bar at column %d", start);
      fail_unless (legend_row >= 0, "no colour map in the legend");
      /* the arrow's tip, 8 pixels ahead of the sensor at (100, 100) */
      assert_pixel (&frame, 100, 92, ANNOTATION);
    } else {
      fail_unless_equals_int (frame_count_other (&frame, BLACK), 0);
    }
    frame_unmap (&frame);
    g_ptr_array_unref (samples);
  }
}

GST_END_TEST;

/* Two boxes on top of each other (as before NMS): the higher score is
 * written right of them, the lower one moves to the left instead of
 * covering it. */
GST_START_TEST (test_scores_do_not_overlap)
{
  const gdouble range[4] = { 0.0, -10.0, 20.0, 10.0 };
  P3dcBox3d boxes[2] = {
    make_box (10.0f, 0.0f, 4.0f, 2.0f, 0.0f, 0.5f, 1),
    make_box (10.0f, 0.0f, 4.0f, 2.0f, 0.0f, 0.9f, 0),
  };
  P3dColor high = p3d_color_for_label (0);
  P3dColor low = p3d_color_for_label (1);
  const P3dBevBoxStyle label_style = { 0, 1, TRUE };
  guint high_right = 0, low_right = 0, low_left = 0;
  P3dCanvas canvas;
  P3dBevView view;
  gint row, column;

  gchar *why = NULL;

  fail_unless (p3d_bev_view_init (&view, range, 0.1, 0, 0, &why), "%s", why);
  canvas.width = view.width;
  canvas.height = view.height;
  canvas.stride = (gsize) view.width * 4;
  canvas.pixels = g_malloc0 (canvas.stride * canvas.height);
  p3d_bev_canvas_draw_boxes (&canvas, &view, (const guint8 *) boxes, 2,
      &label_style);
  /* the boxes span columns 90 to 110, rows 80 to 120 */
  for (row = 70; row < 90; row++)
    for (column = 0; column < canvas.width; column++) {
      P3dColor color = p3d_canvas_get_pixel (&canvas, column, row);

      if (column > 111) {
        high_right += color == high;
        low_right += color == low;
      } else if (column < 89) {
        low_left += color == low;
      }
    }
  fail_unless (high_right > 0, "the higher score is not right of the boxes");
  fail_unless_equals_int (low_right, 0);
  fail_unless (low_left > 0, "the lower score is not left of the boxes");
  g_free (canvas.pixels);
}

GST_END_TEST;

/* A boxes pad's style, set the way gst-launch sets it (the pad's
 * properties through the element as a child proxy, before the pad is
 * requested): one colour for every box whatever its label, edges 3 pixels
 * wide centred on the 1-pixel ones of test_box_yaw_zero, no score; the
 * legend names the pad's boxes by its caption in that colour. */
#define TRUTH_COLOR P3D_RGB (32, 192, 32)
GST_START_TEST (test_box_style)
{
  P3dcBox3d boxes[2] = {
    make_box (10.05f, 0.05f, 4.0f, 2.0f, 0.0f, 1.0f, 0),
    make_box (3.05f, 5.05f, 1.0f, 1.0f, 0.0f, 1.0f, 2),
  };
  Render *render = render_new (VIEW " boxes_0::color=0x0020c020 "
      "boxes_0::line-width=3 boxes_0::show-scores=false "
      "boxes_0::caption=\"true boxes\"");
  GstElement *source = render_add_input (render, "boxes_0", boxes_caps (4));
  GstPad *pad = g_ptr_array_index (render->pads, 0);
  guint color = 0, line_width = 0;
  gboolean show_scores = TRUE;
  gchar *caption = NULL;
  GPtrArray *samples;
  Frame frame;
  gint k, row, column;
  guint legend_pixels = 0;

  g_object_get (pad, "color", &color, "line-width", &line_width,
      "show-scores", &show_scores, "caption", &caption, NULL);
  fail_unless_equals_int (color, 0x0020c020);
  fail_unless_equals_int (line_width, 3);
  fail_unless (!show_scores);
  fail_unless_equals_string (caption, "true boxes");
  g_free (caption);

  render_start (render);
  push (source, boxes_buffer (boxes, 2, 4, 0));
  end_inputs (render);
  samples = render_collect (render, NULL);
  render_free (render);
  fail_unless_equals_int (samples->len, 1);
  frame_map (&frame, sample_at (samples, 0));
  /* the front edge (row 79) is rows 78 to 80, the left (column 89)
   * columns 88 to 90; the colour is drawn opaque whatever its alpha */
  for (k = 78; k <= 80; k++) {
    assert_pixel (&frame, 92, k, TRUTH_COLOR);
    assert_pixel (&frame, k + 10, 110, TRUTH_COLOR);
  }
  assert_pixel (&frame, 92, 77, BLACK);
  assert_pixel (&frame, 92, 81, BLACK);
  assert_pixel (&frame, 87, 110, BLACK);
  assert_pixel (&frame, 91, 110, BLACK);
  /* the heading mark is 3 wide too */
  assert_pixel (&frame, 98, 90, TRUTH_COLOR);
  assert_pixel (&frame, 100, 90, TRUTH_COLOR);
  /* every pixel drawn is the pad's colour: no label colour, no score */
  for (row = 0; row < 200; row++)
    for (column = 0; column < 200; column++) {
      P3dColor c = frame_pixel (&frame, column, row);

      fail_unless (c == BLACK || c == TRUTH_COLOR,
          "pixel (%d, %d) is 0x%08x", column, row, c);
    }
  frame_unmap (&frame);
  g_ptr_array_unref (samples);

  /* with the legend: a swatch of the pad's colour in the top left panel,
   * no box being there */
  render = render_new ("range=\"<0,-10,20,10>\" metres-per-pixel=0.1 "
      "grid-spacing=0 boxes_0::color=0xff20c020 boxes_0::caption=truth");
  source = render_add_input (render, "boxes_0", boxes_caps (4));
  render_start (render);
  push (source, boxes_buffer (boxes, 1, 4, 0));
  end_inputs (render);
  samples = render_collect (render, NULL);
  render_free (render);
  frame_map (&frame, sample_at (samples, 0));
  for (row = 0; row < 40; row++)
    for (column = 0; column < 80; column++)
      legend_pixels += frame_pixel (&frame, column, row) == TRUTH_COLOR;
  fail_unless (legend_pixels > 0, "no swatch of the pad's colour");
  for (row = 0; row < 200; row++)
    for (column = 0; column < 200; column++)
      assert_pixel_not (&frame, column, row, p3d_color_for_label (0));
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
}

GST_END_TEST;

/* Two pads of boxes, as the demo draws them: the true boxes wide and
 * green, the detections over them in the colours of their labels with
 * their scores; a detection on the true box leaves the truth's outer
 * pixels showing around its own. */
GST_START_TEST (test_truth_under_detections)
{
  P3dcBox3d truth = make_box (10.05f, 0.05f, 4.0f, 2.0f, 0.0f, 1.0f, 0);
  P3dcBox3d detection = make_box (10.05f, 0.05f, 4.0f, 2.0f, 0.0f, 0.87f, 0);
  Render *render = render_new (VIEW " boxes_0::color=0xff20c020 "
      "boxes_0::line-width=3 boxes_0::show-scores=false");
  GstElement *truth_source = render_add_input (render, "boxes_0",
      boxes_caps (4));
  GstElement *detection_source = render_add_input (render, "boxes_1",
      boxes_caps (4));
  P3dColor label = p3d_color_for_label (0);
  GPtrArray *samples;
  Frame frame;

  render_start (render);
  push (truth_source, boxes_buffer (&truth, 1, 4, 0));
  push (detection_source, boxes_buffer (&detection, 1, 4, 0));
  end_inputs (render);
  samples = render_collect (render, NULL);
  render_free (render);
  frame_map (&frame, sample_at (samples, 0));
  assert_pixel (&frame, 92, 78, TRUTH_COLOR);
  assert_pixel (&frame, 92, 79, label);
  assert_pixel (&frame, 92, 80, TRUTH_COLOR);
  /* the detection's score, as in test_box_yaw_zero */
  assert_pixel (&frame, 112, 79, label);
  frame_unmap (&frame);
  g_ptr_array_unref (samples);
}

GST_END_TEST;

/* A wide line: a square of the width at each pixel of the thin one,
 * centred (the lower middle for an even width); clipped at the image's
 * edges, the part inside still drawn. */
GST_START_TEST (test_wide_line)
{
  P3dCanvas canvas;
  gint row, column;
  P3dColor white = P3D_RGB (255, 255, 255);

  canvas.width = 20;
  canvas.height = 20;
  canvas.stride = 20 * 4;
  canvas.pixels = g_malloc0 (canvas.stride * canvas.height);
  p3d_canvas_draw_wide_line (&canvas, 5.5, 10.5, 14.5, 10.5, 4, white);
  for (row = 0; row < 20; row++)
    for (column = 0; column < 20; column++) {
      gboolean inside = row >= 9 && row <= 12 && column >= 4 && column <= 16;

      fail_unless_equals_int (p3d_canvas_get_pixel (&canvas, column,
              row) == white, inside);
    }
  /* an 8-wide line 3.5 pixels above the image (rows -7 to 0): its lowest
   * row shows */
  memset (canvas.pixels, 0, canvas.stride * canvas.height);
  p3d_canvas_draw_wide_line (&canvas, -30.0, -3.5, 50.0, -3.5, 8, white);
  for (column = 0; column < 20; column++) {
    fail_unless (p3d_canvas_get_pixel (&canvas, column, 0) == white);
    fail_unless (p3d_canvas_get_pixel (&canvas, column, 1) == 0);
  }
  g_free (canvas.pixels);
}

GST_END_TEST;

/* An array property with the wrong number of values is refused out loud
 * (a GLib warning, as GObject gives for any invalid value) and keeps its
 * value. */
GST_START_TEST (test_array_property_wrong_count)
{
  GstElement *render = gst_element_factory_make ("bevrender", NULL);
  GValue array = G_VALUE_INIT;

  ASSERT_WARNING (gst_util_set_object_arg (G_OBJECT (render),
          "height-range", "<-1,2,3>"));
  g_value_init (&array, GST_TYPE_ARRAY);
  g_object_get_property (G_OBJECT (render), "height-range", &array);
  fail_unless_equals_int (gst_value_array_get_size (&array), 2);
  fail_unless_equals_float (g_value_get_double (gst_value_array_get_value
          (&array, 0)), -3.0);
  g_value_unset (&array);
  gst_object_unref (render);
}

GST_END_TEST;

/* With no input pad the aggregator would wait for ever (issue 32.10): the
 * start is refused, saying what to link. */
GST_START_TEST (test_no_input)
{
  GstElement *pipeline = gst_parse_launch ("bevrender ! fakesink", NULL);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *message;
  GError *error = NULL;

  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_PLAYING),
      GST_STATE_CHANGE_FAILURE);
  message =
      gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (message != NULL);
  gst_message_parse_error (message, &error, NULL);
  fail_unless (g_error_matches (error, GST_CORE_ERROR, GST_CORE_ERROR_PAD));
  fail_unless (g_str_has_prefix (error->message, "bevrender has no input: "
          "link a source to one of its request pads points_%u, voxels_%u, "
          "features_%u or boxes_%u"), "%s", error->message);
  g_clear_error (&error);
  gst_message_unref (message);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* class-names reads as gst-launch writes it; a weights file that is not
 * there stops the start naming it. */
GST_START_TEST (test_class_names)
{
  GstElement *pipeline = gst_parse_launch ("pointcloudtestsrc num-buffers=1 "
      "emit=boxes ! bevrender name=r class-names=\"<car,pedestrian,"
      "cyclist>\" weights=/nonexistent.safetensors ! fakesink", NULL);
  GstElement *render = gst_bin_get_by_name (GST_BIN (pipeline), "r");
  GstBus *bus = gst_element_get_bus (pipeline);
  GValue names = G_VALUE_INIT;
  GstMessage *message;
  GError *error = NULL;

  g_value_init (&names, GST_TYPE_ARRAY);
  g_object_get_property (G_OBJECT (render), "class-names", &names);
  fail_unless_equals_int (gst_value_array_get_size (&names), 3);
  fail_unless_equals_string (g_value_get_string (gst_value_array_get_value
          (&names, 2)), "cyclist");
  g_value_unset (&names);
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_PLAYING),
      GST_STATE_CHANGE_FAILURE);
  message =
      gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (message != NULL);
  gst_message_parse_error (message, &error, NULL);
  fail_unless (g_error_matches (error, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_NOT_FOUND), "%s", error->message);
  fail_unless (strstr (error->message, "/nonexistent.safetensors") != NULL);
  g_clear_error (&error);
  gst_message_unref (message);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (render);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* Caps a pad cannot draw from are refused by the accept-caps query and as
 * a caps event. */
GST_START_TEST (test_bad_caps)
{
  static const struct
  {
    const gchar *pad;
    const gchar *caps;
  } refused[] = {
    {"points_0", "application/x-boxes3d, max-boxes=4"},
    {"points_0", "application/x-point-cloud, format=xyzq"},
    {"points_0", "video/x-raw, format=RGBA, width=4, height=4"},
    {"voxels_0", "application/x-voxels, format=xyzi"},
    {"features_0", "application/x-bev-features, format=F32, channels=2"},
    {"features_0", "application/x-bev-features, format=F64, channels=2, "
          "width=4, height=4"},
    {"boxes_0", "application/x-boxes3d"},
    {"boxes_0", "application/x-boxes2d, max-boxes=4"},
  };
  static const struct
  {
    const gchar *pad;
    const gchar *caps;
  } accepted[] = {
    {"points_0", "application/x-point-cloud, format=xyzir"},
    {"points_0", "application/x-point-cloud(memory:CUDAMemory), format=xyz"},
    {"features_0", "application/x-bev-features, format=F16, channels=2, "
          "width=4, height=4"},
    {"boxes_0", "application/x-boxes3d(memory:CUDAMemory), max-boxes=4"},
  };
  GstElement *render = gst_element_factory_make ("bevrender", NULL);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (refused); i++) {
    GstPad *pad = gst_element_request_pad_simple (render, refused[i].pad);
    GstCaps *caps = gst_caps_from_string (refused[i].caps);

    fail_unless (pad != NULL);
    fail_if (gst_pad_query_accept_caps (pad, caps), "%s accepts %s",
        refused[i].pad, refused[i].caps);
    gst_caps_unref (caps);
    gst_element_release_request_pad (render, pad);
    gst_object_unref (pad);
  }
  for (i = 0; i < G_N_ELEMENTS (accepted); i++) {
    GstPad *pad = gst_element_request_pad_simple (render, accepted[i].pad);
    GstCaps *caps = gst_caps_from_string (accepted[i].caps);

    fail_unless (gst_pad_query_accept_caps (pad, caps), "%s refuses %s",
        accepted[i].pad, accepted[i].caps);
    gst_caps_unref (caps);
    gst_element_release_request_pad (render, pad);
    gst_object_unref (pad);
  }
  gst_object_unref (render);
}

GST_END_TEST;

/* As a caps event: refused when sent to the pad, and data behind refused
 * caps does not flow. */
GST_START_TEST (test_bad_caps_event)
{
  P3dcBox3d box = make_box (10.05f, 0.05f, 4.0f, 2.0f, 0.0f, 0.5f, 0);
  GstHarness *h = gst_harness_new_with_padnames ("bevrender", "boxes_0",
      "src");
  GstPad *pad = gst_element_get_static_pad (h->element, "boxes_0");
  GstCaps *bad = gst_caps_from_string ("application/x-boxes3d, max-boxes=0");
  GstCaps *good = boxes_caps (4);

  gst_harness_play (h);
  fail_unless (gst_pad_send_event (pad,
          gst_event_new_stream_start ("bad-caps")));
  fail_if (gst_pad_send_event (pad, gst_event_new_caps (bad)));
  fail_unless (gst_pad_send_event (pad, gst_event_new_caps (good)));

  gst_harness_set_src_caps (h, boxes_caps (4));
  gst_harness_push_event (h, gst_event_new_caps (bad));
  fail_unless_equals_int (gst_harness_push (h, boxes_buffer (&box, 1, 4, 0)),
      GST_FLOW_NOT_NEGOTIATED);
  gst_caps_unref (bad);
  gst_caps_unref (good);
  gst_object_unref (pad);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Buffers that do not fit their caps: an error naming the pad. */
GST_START_TEST (test_bad_buffers)
{
  P3dcBox3d box = make_box (10.05f, 0.05f, 4.0f, 2.0f, 0.0f, 0.5f, 0);
  struct
  {
    const gchar *pad;
    GstCaps *caps;
    GstBuffer *buffer;
    const gchar *expected;
  } cases[3];
  guint32 too_many = 5;
  guint i;

  /* records for 4 boxes where the caps say 8 */
  cases[0].pad = "boxes_0";
  cases[0].caps = boxes_caps (8);
  cases[0].buffer = boxes_buffer (&box, 1, 4, 0);
  cases[0].expected = "does not hold the tensors";
  /* a count above max-boxes */
  cases[1].pad = "boxes_0";
  cases[1].caps = boxes_caps (4);
  cases[1].buffer = boxes_buffer (&box, 1, 4, 0);
  gst_buffer_memset (cases[1].buffer, 4 * sizeof (P3dcBox3d), 0, 4);
  gst_buffer_fill (cases[1].buffer, 4 * sizeof (P3dcBox3d), &too_many, 4);
  cases[1].expected = "more than max-boxes";
  /* half a point */
  cases[2].pad = "points_0";
  cases[2].caps = gst_caps_from_string ("application/x-point-cloud, "
      "format=xyzi");
  cases[2].buffer = gst_buffer_new_allocate (NULL, 8, NULL);
  GST_BUFFER_PTS (cases[2].buffer) = 0;
  cases[2].expected = "does not hold the tensors";

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    Render *render = render_new (VIEW);
    GstElement *source = render_add_input (render, cases[i].pad,
        cases[i].caps);
    GPtrArray *samples;
    gchar *error = NULL;

    render_start (render);
    gst_app_src_push_buffer (GST_APP_SRC (source), cases[i].buffer);
    end_inputs (render);
    samples = render_collect (render, &error);
    fail_unless (error != NULL, "case %u: no error", i);
    fail_unless (strstr (error, cases[i].expected) != NULL
        && strstr (error, cases[i].pad) != NULL, "case %u: %s", i, error);
    fail_unless_equals_int (samples->len, 0);
    g_free (error);
    g_ptr_array_unref (samples);
    render_free (render);
  }
}

GST_END_TEST;

/* The synthetic scene, twice: the same bytes; and something drawn. */
static GPtrArray *
render_scene (void)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch ("bevrender name=r width=400 ! "
      "appsink name=sink sync=false "
      "pointcloudtestsrc seed=3 num-buffers=2 ! r.points_0 "
      "pointcloudtestsrc seed=3 num-buffers=2 emit=boxes ! r.boxes_0",
      &error);
  GstElement *sink;
  GPtrArray *samples = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_sample_unref);
  GstMessage *message;
  GstSample *sample;
  GstBus *bus;

  fail_unless (pipeline != NULL, "%s", error ? error->message : "?");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink))))
    g_ptr_array_add (samples, sample);
  message = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (message == NULL, "the scene pipeline failed");
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return samples;
}

GST_START_TEST (test_deterministic)
{
  GPtrArray *a = render_scene (), *b = render_scene ();
  guint i;

  fail_unless_equals_int (a->len, 2);
  fail_unless_equals_int (b->len, 2);
  for (i = 0; i < 2; i++) {
    Frame fa, fb;
    gsize k;

    frame_map (&fa, sample_at (a, i));
    frame_map (&fb, sample_at (b, i));
    fail_unless_equals_uint64 (fa.map.size, fb.map.size);
    for (k = 0; k < fa.map.size; k++)
      if (fa.map.data[k] != fb.map.data[k])
        fail ("frame %u differs at byte %" G_GSIZE_FORMAT ": %u, then %u", i,
            k, fa.map.data[k], fb.map.data[k]);
    /* ground rings, walls, cars: well over a thousand pixels */
    fail_unless (frame_count_other (&fa, BLACK) > 5000);
    frame_unmap (&fa);
    frame_unmap (&fb);
  }
  g_ptr_array_unref (a);
  g_ptr_array_unref (b);
}

GST_END_TEST;

/* Request pads: names by kind, numbered as asked or next. */
GST_START_TEST (test_request_pads)
{
  GstElement *render = gst_element_factory_make ("bevrender", NULL);
  GstPad *a = gst_element_request_pad_simple (render, "points_%u");
  GstPad *b = gst_element_request_pad_simple (render, "points_%u");
  GstPad *c = gst_element_request_pad_simple (render, "boxes_7");
  GstPad *d = gst_element_request_pad_simple (render, "boxes_%u");

  fail_unless_equals_string (GST_PAD_NAME (a), "points_0");
  fail_unless_equals_string (GST_PAD_NAME (b), "points_1");
  fail_unless_equals_string (GST_PAD_NAME (c), "boxes_7");
  fail_unless_equals_string (GST_PAD_NAME (d), "boxes_8");
  gst_object_unref (a);
  gst_object_unref (b);
  gst_object_unref (c);
  gst_object_unref (d);
  gst_object_unref (render);
}

GST_END_TEST;

static Suite *
bevrender_suite (void)
{
  Suite *s = suite_create ("bevrender");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_single_point);
  tcase_add_test (tc, test_point_size);
  tcase_add_test (tc, test_color_by);
  tcase_add_test (tc, test_box_yaw_zero);
  tcase_add_test (tc, test_box_yaw_quarter);
  tcase_add_test (tc, test_voxel_cell);
  tcase_add_test (tc, test_pillar_cells);
  tcase_add_test (tc, test_voxels_outside_grid);
  tcase_add_test (tc, test_voxels_off_grid_counted);
  tcase_add_test (tc, test_features_heat_map);
  tcase_add_test (tc, test_layer_order);
  tcase_add_test (tc, test_timestamps_matched);
  tcase_add_test (tc, test_newest_buffer_wins);
  tcase_add_test (tc, test_input_framerate);
  tcase_add_test (tc, test_empty_inputs);
  tcase_add_test (tc, test_grid);
  tcase_add_test (tc, test_geometry);
  tcase_add_test (tc, test_centred_range);
  tcase_add_test (tc, test_bad_geometry);
  tcase_add_test (tc, test_array_property_wrong_count);
  tcase_add_test (tc, test_no_input);
  tcase_add_test (tc, test_class_names);
  tcase_add_test (tc, test_range_from_caps);
  tcase_add_test (tc, test_annotations);
  tcase_add_test (tc, test_scores_do_not_overlap);
  tcase_add_test (tc, test_box_style);
  tcase_add_test (tc, test_truth_under_detections);
  tcase_add_test (tc, test_wide_line);
  tcase_add_test (tc, test_bad_caps);
  tcase_add_test (tc, test_bad_caps_event);
  tcase_add_test (tc, test_bad_buffers);
  tcase_add_test (tc, test_deterministic);
  tcase_add_test (tc, test_request_pads);
  return s;
}

P3D_CHECK_MAIN (bevrender);
