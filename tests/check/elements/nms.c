/* nms as an element, on its reference path: boxes3d in the bev-rotated,
 * bev-aligned and circle modes and boxes2d in the iou mode (the mode decides
 * the caps), output equal to p3dc_nms_cpu with the zeroed tail and the count,
 * thresholds changed while playing taking effect at the next buffer, a
 * count above max-boxes, NaN records, an empty frame, and bad caps. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-elem.h"
#include "nms.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "../libs/p3dtest-nmscases.h"

#define MAX_BOXES 64

/* Detector-like candidates: clusters of five overlapping boxes around an
 * object, scores in steps of 1/32 (so that ties happen), labels 0 to 2
 * drawn per box (so that per-class matters). */
static void
random_boxes3d (P3dTestRng * rng, P3dcBox3d * boxes, guint n)
{
  gfloat cx = 0, cy = 0, yaw = 0;
  guint i;

  for (i = 0; i < n; i++) {
    P3dcBox3d *b = &boxes[i];

    if (i % 5 == 0) {
      cx = p3d_test_rng_uniform (rng, 0.0f, 40.0f);
      cy = p3d_test_rng_uniform (rng, -15.0f, 15.0f);
      yaw = p3d_test_rng_uniform (rng, -3.14f, 3.14f);
    }
    b->x = cx + p3d_test_rng_uniform (rng, -0.8f, 0.8f);
    b->y = cy + p3d_test_rng_uniform (rng, -0.8f, 0.8f);
    b->z = p3d_test_rng_uniform (rng, -1.5f, -0.5f);
    b->dx = p3d_test_rng_uniform (rng, 3.5f, 4.3f);
    b->dy = p3d_test_rng_uniform (rng, 1.5f, 1.8f);
    b->dz = p3d_test_rng_uniform (rng, 1.4f, 1.6f);
    b->yaw = yaw + p3d_test_rng_uniform (rng, -0.3f, 0.3f);
    b->score = p3d_test_rng_below (rng, 32) / 32.0f;
    b->label = (gint32) p3d_test_rng_below (rng, 3);
  }
}

/* Small 2D boxes (3 to 12 pixels), where the +1 of offset matters. */
static void
random_boxes2d (P3dTestRng * rng, P3dcBox2d * boxes, guint n)
{
  gfloat cx = 0, cy = 0, w = 0, h = 0;
  guint i;

  for (i = 0; i < n; i++) {
    P3dcBox2d *b = &boxes[i];
    gfloat x, y, bw, bh;

    if (i % 5 == 0) {
      cx = p3d_test_rng_uniform (rng, 0.0f, 300.0f);
      cy = p3d_test_rng_uniform (rng, 0.0f, 200.0f);
      w = p3d_test_rng_uniform (rng, 3.0f, 12.0f);
      h = p3d_test_rng_uniform (rng, 3.0f, 12.0f);
    }
    x = cx + p3d_test_rng_uniform (rng, -1.5f, 1.5f);
    y = cy + p3d_test_rng_uniform (rng, -1.5f, 1.5f);
    bw = w + p3d_test_rng_uniform (rng, -1.0f, 1.0f);
    bh = h + p3d_test_rng_uniform (rng, -1.0f, 1.0f);
    b->x1 = floorf (x - bw / 2);
    b->y1 = floorf (y - bh / 2);
    b->x2 = floorf (x + bw / 2);
    b->y2 = floorf (y + bh / 2);
    b->score = p3d_test_rng_below (rng, 32) / 32.0f;
    b->label = (gint32) p3d_test_rng_below (rng, 3);
  }
}

/* One frame: max-boxes records (the first @count valid, the rest zero
 * unless a test fills them) and the count. */
typedef struct
{
  P3dcNmsMode mode;
  gsize record_size;
  guint max_boxes;
  guint8 *records;
  guint32 count;
} Frame;

static void
frame_init (Frame * frame, P3dcNmsMode mode, guint max_boxes, guint count,
    guint64 seed)
{
  P3dTestRng rng;

  p3d_test_rng_init (&rng, seed);
  frame->mode = mode;
  frame->record_size = p3dc_nms_record_size (mode);
  frame->max_boxes = max_boxes;
  frame->records = g_malloc0 (max_boxes * frame->record_size);
  frame->count = count;
  if (mode == P3DC_NMS_IOU)
    random_boxes2d (&rng, (P3dcBox2d *) frame->records, count);
  else
    random_boxes3d (&rng, (P3dcBox3d *) frame->records, count);
}

static void
frame_clear (Frame * frame)
{
  g_free (frame->records);
}

static GstBuffer *
frame_buffer (const Frame * frame)
{
  gconstpointer data[2] = { frame->records, &frame->count };
  gsize sizes[2] = { frame->max_boxes * frame->record_size, 4 };

  return elemtest_tensors_buffer (2, data, sizes);
}

/* The element's defaults, as documented by its properties. */
static void
element_default_params (P3dcNmsParams * params, P3dcNmsMode mode)
{
  p3dc_nms_params_init (params);
  params->mode = mode;
  params->iou_threshold = 0.5f;
  params->distance_threshold = 2.0f;
  params->offset = 0.0f;
  params->score_threshold = 0.0f;
  params->pre_max = 0;
  params->post_max = 0;
  params->per_class = 0;
}

/* The library's output for the first @count records of @frame. */
static guint8 *
expected_records (const P3dcNmsParams * params, const Frame * frame,
    guint32 count, guint32 * kept)
{
  guint8 *out = g_malloc0 (frame->max_boxes * frame->record_size);

  fail_unless_equals_int (p3dc_nms_cpu (params, frame->records, count, out,
          frame->max_boxes, kept, NULL), P3DC_OK);
  return out;
}

/* The output equals the library's: records to the last byte of the
 * capacity (zeroed tail) and the count. */
static void
assert_output (GstBuffer * out, const P3dcNmsParams * params,
    const Frame * frame, guint32 count, const gchar * what)
{
  guint32 kept = 0;
  guint8 *expected = expected_records (params, frame, count, &kept);
  gsize size = frame->max_boxes * frame->record_size;
  guint8 *zeros = g_malloc0 (size);
  gchar *name;

  fail_unless_equals_int (gst_buffer_n_memory (out), 2);
  /* the library itself zeroes the tail */
  fail_unless (memcmp (expected + kept * frame->record_size, zeros,
          size - kept * frame->record_size) == 0);
  name = g_strdup_printf ("%s: records (%u kept)", what, kept);
  elemtest_assert_tensor (out, 0, expected, size, name);
  g_free (name);
  name = g_strdup_printf ("%s: count", what);
  elemtest_assert_tensor (out, 1, &kept, 4, name);
  g_free (name);
  g_free (zeros);
  g_free (expected);
}

static GstHarness *
nms_harness (const gchar * properties, P3dcNmsMode mode, guint max_boxes)
{
  const gchar *media_type = mode == P3DC_NMS_IOU ? "application/x-boxes2d" :
      "application/x-boxes3d";
  gchar *launch = g_strdup_printf ("nms backend=cpu %s", properties);
  gchar *caps = g_strdup_printf ("%s, max-boxes=(int)%u, framerate=30/1",
      media_type, max_boxes);
  GstHarness *h = gst_harness_new_parse (launch);

  gst_harness_set_src_caps_str (h, caps);
  gst_harness_set_sink_caps_str (h, media_type);
  g_free (launch);
  g_free (caps);
  return h;
}

static const struct
{
  P3dcNmsMode mode;
  const gchar *nick;
} modes[] = {
  {P3DC_NMS_BEV_ROTATED, "bev-rotated"},
  {P3DC_NMS_BEV_ALIGNED, "bev-aligned"},
  {P3DC_NMS_CIRCLE, "circle"},
  {P3DC_NMS_IOU, "iou"},
};

GST_START_TEST (test_output_matches_library)
{
  guint m;

  for (m = 0; m < G_N_ELEMENTS (modes); m++) {
    gchar *properties = g_strdup_printf ("mode=%s", modes[m].nick);
    GstHarness *h = nms_harness (properties, modes[m].mode, MAX_BOXES);
    P3dcNmsParams params;
    GstBuffer *out;
    GstCaps *in_caps, *out_caps;
    guint32 kept = 0;
    guint8 *expected;
    Frame frame;

    frame_init (&frame, modes[m].mode, MAX_BOXES, 50, 100 + m);
    element_default_params (&params, modes[m].mode);
    /* the frame is worth testing: some boxes suppressed, several kept */
    expected = expected_records (&params, &frame, frame.count, &kept);
    fail_unless (kept > 5 && kept < 45, "%s keeps %u of 50", modes[m].nick,
        kept);
    g_free (expected);

    fail_unless_equals_int (gst_harness_push (h, frame_buffer (&frame)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    assert_output (out, &params, &frame, frame.count, modes[m].nick);
    gst_buffer_unref (out);

    /* the output has the input's caps */
    in_caps = gst_pad_get_current_caps (h->srcpad);
    out_caps = gst_pad_get_current_caps (h->sinkpad);
    fail_unless (gst_caps_is_equal (in_caps, out_caps));
    gst_caps_unref (in_caps);
    gst_caps_unref (out_caps);

    frame_clear (&frame);
    gst_harness_teardown (h);
    g_free (properties);
  }
}

GST_END_TEST;

/* 3D boxes with a velocity (velocity=true): each kept box keeps its own,
 * found here by matching the kept records against the input's; zeros
 * after the kept ones; the output caps say velocity=true as the input's. */
GST_START_TEST (test_velocity_follows_boxes)
{
  guint m;

  for (m = 0; m < 3; m++) {
    gchar *launch = g_strdup_printf ("nms backend=cpu mode=%s",
        modes[m].nick);
    GstHarness *h = gst_harness_new_parse (launch);
    gfloat velocity[2 * MAX_BOXES] = { 0 };
    gconstpointer data[3];
    gsize sizes[3];
    P3dcNmsParams params;
    P3dTestRng rng;
    GstBuffer *out;
    GstMapInfo records, speeds;
    GstCaps *out_caps;
    gboolean has_velocity = FALSE;
    guint32 kept = 0;
    guint8 *expected;
    Frame frame;
    guint i, j;

    gst_harness_set_src_caps_str (h, "application/x-boxes3d, "
        "max-boxes=(int)64, velocity=true");
    gst_harness_set_sink_caps_str (h, "application/x-boxes3d");
    frame_init (&frame, modes[m].mode, MAX_BOXES, 50, 300 + m);
    p3d_test_rng_init (&rng, 400 + m);
    for (i = 0; i < 2 * frame.count; i++)
      velocity[i] = p3d_test_rng_uniform (&rng, -20.0f, 20.0f);
    data[0] = frame.records;
    data[1] = &frame.count;
    data[2] = velocity;
    sizes[0] = MAX_BOXES * frame.record_size;
    sizes[1] = 4;
    sizes[2] = sizeof (velocity);
    fail_unless_equals_int (gst_harness_push (h,
            elemtest_tensors_buffer (3, data, sizes)), GST_FLOW_OK);
    out = gst_harness_pull (h);
    fail_unless_equals_int (gst_buffer_n_memory (out), 3);
    element_default_params (&params, modes[m].mode);
    expected = expected_records (&params, &frame, frame.count, &kept);
    fail_unless (kept > 5 && kept < 45);
    fail_unless (gst_memory_map (gst_buffer_peek_memory (out, 0), &records,
            GST_MAP_READ));
    fail_unless (gst_memory_map (gst_buffer_peek_memory (out, 2), &speeds,
            GST_MAP_READ));
    fail_unless_equals_int (speeds.size, sizeof (velocity));
    fail_unless (memcmp (records.data, expected, kept * frame.record_size)
        == 0);
    for (i = 0; i < MAX_BOXES; i++) {
      const gfloat *v = (const gfloat *) speeds.data + 2 * i;

      if (i >= kept) {
        fail_unless (v[0] == 0.0f && v[1] == 0.0f, "%s: velocity %u after "
            "the kept boxes", modes[m].nick, i);
        continue;
      }
      for (j = 0; j < frame.count; j++)
        if (memcmp (records.data + i * frame.record_size, frame.records +
                j * frame.record_size, frame.record_size) == 0)
          break;
      fail_unless (j < frame.count);
      fail_unless (v[0] == velocity[2 * j] && v[1] == velocity[2 * j + 1],
          "%s: kept box %u (input %u) has velocity (%g, %g), not (%g, %g)",
          modes[m].nick, i, j, v[0], v[1], velocity[2 * j],
          velocity[2 * j + 1]);
    }
    gst_memory_unmap (gst_buffer_peek_memory (out, 0), &records);
    gst_memory_unmap (gst_buffer_peek_memory (out, 2), &speeds);
    out_caps = gst_pad_get_current_caps (h->sinkpad);
    fail_unless (gst_structure_get_boolean (gst_caps_get_structure (out_caps,
                0), "velocity", &has_velocity) && has_velocity);
    gst_caps_unref (out_caps);
    gst_buffer_unref (out);
    g_free (expected);
    frame_clear (&frame);
    gst_harness_teardown (h);
    g_free (launch);
  }
}

GST_END_TEST;

/* Records beyond the count are not boxes, whatever they hold. */
GST_START_TEST (test_records_beyond_count_ignored)
{
  guint m;

  for (m = 0; m < G_N_ELEMENTS (modes); m++) {
    gchar *properties = g_strdup_printf ("mode=%s", modes[m].nick);
    GstHarness *h = nms_harness (properties, modes[m].mode, MAX_BOXES);
    P3dcNmsParams params;
    GstBuffer *out;
    Frame frame, junk;

    frame_init (&frame, modes[m].mode, MAX_BOXES, 20, 200 + m);
    frame_init (&junk, modes[m].mode, MAX_BOXES, MAX_BOXES, 300 + m);
    memcpy (frame.records + 20 * frame.record_size,
        junk.records + 20 * frame.record_size,
        (MAX_BOXES - 20) * frame.record_size);
    element_default_params (&params, modes[m].mode);
    fail_unless_equals_int (gst_harness_push (h, frame_buffer (&frame)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    assert_output (out, &params, &frame, 20, modes[m].nick);
    gst_buffer_unref (out);
    frame_clear (&frame);
    frame_clear (&junk);
    gst_harness_teardown (h);
    g_free (properties);
  }
}

GST_END_TEST;

static void
assert_refused (const gchar * properties, const gchar * caps)
{
  GstHarness *h = gst_harness_new_parse (properties);

  gst_harness_set_src_caps_str (h, caps);
  gst_harness_set_sink_caps_str (h, "application/x-boxes3d; "
      "application/x-boxes2d");
  /* the caps are offered last (so that nms, not the source, says what is
   * wrong: elements/negotiation) and refused when set */
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_allocate (NULL,
              36 * 8 + 4, NULL)), GST_FLOW_NOT_NEGOTIATED);
  gst_harness_teardown (h);
}

/* The mode decides the media type: the other one is refused. */
GST_START_TEST (test_mode_decides_caps)
{
  GstElement *nms = gst_element_factory_make ("nms", NULL);
  GstPadTemplate *templ;
  GstCaps *caps, *boxes2d = gst_caps_from_string ("application/x-boxes2d");
  gint mode = -1;

  /* both media types in the template; bev-rotated by default */
  templ = gst_element_get_pad_template (nms, "sink");
  caps = gst_pad_template_get_caps (templ);
  fail_unless (gst_caps_can_intersect (caps, boxes2d));
  gst_caps_unref (caps);
  gst_caps_unref (boxes2d);
  g_object_get (nms, "mode", &mode, NULL);
  fail_unless_equals_int (mode, P3DC_NMS_BEV_ROTATED);
  gst_object_unref (nms);

  assert_refused ("nms backend=cpu mode=iou",
      "application/x-boxes3d, max-boxes=(int)8");
  assert_refused ("nms backend=cpu", "application/x-boxes2d, "
      "max-boxes=(int)8");
  assert_refused ("nms backend=cpu mode=circle",
      "application/x-boxes2d, max-boxes=(int)8");
  assert_refused ("nms backend=cpu mode=bev-aligned",
      "application/x-boxes2d, max-boxes=(int)8");
}

GST_END_TEST;

/* One property changed while playing: the next buffer uses it. */
typedef struct
{
  P3dcNmsMode mode;
  const gchar *property;
  const gchar *value;
} Change;

static void
apply_change (P3dcNmsParams * params, const Change * change)
{
  const gchar *p = change->property;
  gdouble value = g_ascii_strtod (change->value, NULL);

  if (g_str_equal (p, "iou-threshold"))
    params->iou_threshold = (gfloat) value;
  else if (g_str_equal (p, "distance-threshold"))
    params->distance_threshold = (gfloat) value;
  else if (g_str_equal (p, "score-threshold"))
    params->score_threshold = (gfloat) value;
  else if (g_str_equal (p, "offset"))
    params->offset = (gfloat) value;
  else if (g_str_equal (p, "pre-max"))
    params->pre_max = (guint32) value;
  else if (g_str_equal (p, "post-max"))
    params->post_max = (guint32) value;
  else if (g_str_equal (p, "per-class"))
    params->per_class = g_str_equal (change->value, "true");
  else
    g_assert_not_reached ();
}

GST_START_TEST (test_thresholds_change_while_playing)
{
  static const Change changes[] = {
    {P3DC_NMS_BEV_ROTATED, "iou-threshold", "0.05"},
    {P3DC_NMS_BEV_ALIGNED, "iou-threshold", "0.05"},
    {P3DC_NMS_IOU, "iou-threshold", "0.1"},
    {P3DC_NMS_BEV_ROTATED, "score-threshold", "0.6"},
    {P3DC_NMS_IOU, "score-threshold", "0.6"},
    {P3DC_NMS_BEV_ROTATED, "pre-max", "5"},
    {P3DC_NMS_CIRCLE, "post-max", "3"},
    {P3DC_NMS_BEV_ROTATED, "per-class", "true"},
    {P3DC_NMS_IOU, "per-class", "true"},
    {P3DC_NMS_IOU, "offset", "1"},
    {P3DC_NMS_CIRCLE, "distance-threshold", "0.5"},
  };
  guint c;

  for (c = 0; c < G_N_ELEMENTS (changes); c++) {
    const Change *change = &changes[c];
    gchar *properties = g_strdup_printf ("mode=%s",
        change->mode == P3DC_NMS_IOU ? "iou" : change->mode ==
        P3DC_NMS_CIRCLE ? "circle" : change->mode == P3DC_NMS_BEV_ALIGNED ?
        "bev-aligned" : "bev-rotated");
    gchar *what = g_strdup_printf ("%s %s=%s", properties, change->property,
        change->value);
    GstHarness *h = nms_harness (properties, change->mode, MAX_BOXES);
    GstElement *nms = gst_harness_find_element (h, "nms");
    P3dcNmsParams before, after;
    guint32 kept_before = 0, kept_after = 0;
    guint8 *records_before, *records_after;
    GstBuffer *out;
    Frame frame;
    guint round;

    frame_init (&frame, change->mode, MAX_BOXES, 60, 400 + c);
    element_default_params (&before, change->mode);
    after = before;
    apply_change (&after, change);
    /* the change makes a difference on this frame */
    records_before = expected_records (&before, &frame, 60, &kept_before);
    records_after = expected_records (&after, &frame, 60, &kept_after);
    fail_unless (kept_before != kept_after || memcmp (records_before,
            records_after, MAX_BOXES * frame.record_size) != 0,
        "%s: no difference on the test frame", what);
    g_free (records_before);
    g_free (records_after);

    fail_unless_equals_int (gst_harness_push (h, frame_buffer (&frame)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    assert_output (out, &before, &frame, 60, what);
    gst_buffer_unref (out);

    gst_util_set_object_arg (G_OBJECT (nms), change->property, change->value);
    for (round = 0; round < 2; round++) {
      fail_unless_equals_int (gst_harness_push (h, frame_buffer (&frame)),
          GST_FLOW_OK);
      out = gst_harness_pull (h);
      assert_output (out, &after, &frame, 60, what);
      gst_buffer_unref (out);
    }

    frame_clear (&frame);
    gst_object_unref (nms);
    gst_harness_teardown (h);
    g_free (properties);
    g_free (what);
  }
}

GST_END_TEST;

/* A count larger than the records tensor holds: the boxes that are there
 * are used, and a warning says the frame was malformed. */
GST_START_TEST (test_count_above_max_boxes_clamped)
{
  GstHarness *h = nms_harness ("", P3DC_NMS_BEV_ROTATED, 16);
  GstBus *bus = gst_bus_new ();
  P3dcNmsParams params;
  GstBuffer *out;
  Frame frame;

  gst_element_set_bus (h->element, bus);
  frame_init (&frame, P3DC_NMS_BEV_ROTATED, 16, 16, 500);
  frame.count = 20;
  element_default_params (&params, P3DC_NMS_BEV_ROTATED);
  fail_unless_equals_int (gst_harness_push (h, frame_buffer (&frame)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_output (out, &params, &frame, 16, "count 20 of 16");
  gst_buffer_unref (out);

  /* docs/development.md's wording and code for a count over its capacity */
  g_free (elemtest_expect_message (bus, GST_MESSAGE_WARNING, GST_STREAM_ERROR,
          GST_STREAM_ERROR_FORMAT, "Box count 20 is more than max-boxes 16",
          NULL));

  frame_clear (&frame);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

static gboolean
record_is_finite (const guint8 * record, gsize record_size)
{
  gsize i;

  /* every field but the label (the last word) is a float */
  for (i = 0; i + 4 < record_size; i += 4) {
    gfloat value;

    memcpy (&value, record + i, 4);
    if (!isfinite (value))
      return FALSE;
  }
  return TRUE;
}

GST_START_TEST (test_nan_records_dropped)
{
  guint m;

  for (m = 0; m < G_N_ELEMENTS (modes); m++) {
    gchar *properties = g_strdup_printf ("mode=%s", modes[m].nick);
    GstHarness *h = nms_harness (properties, modes[m].mode, MAX_BOXES);
    P3dcNmsParams params;
    GstBuffer *out;
    GstMapInfo info;
    guint32 count;
    Frame frame;
    guint i;

    frame_init (&frame, modes[m].mode, MAX_BOXES, 30, 600 + m);
    if (modes[m].mode == P3DC_NMS_IOU) {
      P3dcBox2d *b = (P3dcBox2d *) frame.records;

      b[3].score = NAN;
      b[7].x1 = NAN;
      b[11].y2 = INFINITY;
      b[15].x2 = b[15].x1 - 1.0f;
      b[19].score = -INFINITY;
    } else {
      P3dcBox3d *b = (P3dcBox3d *) frame.records;

      b[3].score = NAN;
      b[7].x = NAN;
      b[11].dy = INFINITY;
      b[15].dx = -1.0f;
      b[19].yaw = NAN;
      b[23].z = -INFINITY;
    }
    element_default_params (&params, modes[m].mode);
    fail_unless_equals_int (gst_harness_push (h, frame_buffer (&frame)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    assert_output (out, &params, &frame, frame.count, modes[m].nick);

    fail_unless (gst_memory_map (gst_buffer_peek_memory (out, 1), &info,
            GST_MAP_READ));
    memcpy (&count, info.data, 4);
    gst_memory_unmap (gst_buffer_peek_memory (out, 1), &info);
    fail_unless (gst_memory_map (gst_buffer_peek_memory (out, 0), &info,
            GST_MAP_READ));
    for (i = 0; i < count; i++)
      fail_unless (record_is_finite (info.data + i * frame.record_size,
              frame.record_size), "%s: output box %u is not finite",
          modes[m].nick, i);
    gst_memory_unmap (gst_buffer_peek_memory (out, 0), &info);
    gst_buffer_unref (out);
    frame_clear (&frame);
    gst_harness_teardown (h);
    g_free (properties);
  }
}

GST_END_TEST;

GST_START_TEST (test_empty_frame)
{
  guint m;

  for (m = 0; m < G_N_ELEMENTS (modes); m++) {
    gchar *properties = g_strdup_printf ("mode=%s", modes[m].nick);
    GstHarness *h = nms_harness (properties, modes[m].mode, MAX_BOXES);
    P3dcNmsParams params;
    GstBuffer *out;
    guint8 *zeros = g_malloc0 (MAX_BOXES * 36);
    guint32 zero = 0;
    Frame frame, junk;

    /* a frame of 20 boxes, then an empty one whose records are stale:
     * the output buffer of the first comes back from the pool */
    frame_init (&frame, modes[m].mode, MAX_BOXES, 20, 700 + m);
    element_default_params (&params, modes[m].mode);
    fail_unless_equals_int (gst_harness_push (h, frame_buffer (&frame)),
        GST_FLOW_OK);
    gst_buffer_unref (gst_harness_pull (h));

    frame_init (&junk, modes[m].mode, MAX_BOXES, MAX_BOXES, 800 + m);
    junk.count = 0;
    fail_unless_equals_int (gst_harness_push (h, frame_buffer (&junk)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    elemtest_assert_tensor (out, 0, zeros, MAX_BOXES * frame.record_size,
        "empty frame: records");
    elemtest_assert_tensor (out, 1, &zero, 4, "empty frame: count");
    gst_buffer_unref (out);

    frame_clear (&frame);
    frame_clear (&junk);
    g_free (zeros);
    gst_harness_teardown (h);
    g_free (properties);
  }
}

GST_END_TEST;

GST_START_TEST (test_timestamps_kept)
{
  GstHarness *h = nms_harness ("", P3DC_NMS_BEV_ROTATED, 8);
  GstBuffer *in, *out;
  Frame frame;

  frame_init (&frame, P3DC_NMS_BEV_ROTATED, 8, 4, 900);
  in = frame_buffer (&frame);
  GST_BUFFER_PTS (in) = 3 * GST_SECOND;
  GST_BUFFER_DURATION (in) = GST_SECOND / 30;
  GST_BUFFER_OFFSET (in) = 90;
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 3 * GST_SECOND);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), GST_SECOND / 30);
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET (out), 90);
  gst_buffer_unref (out);
  frame_clear (&frame);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A packed record (filesrc) and a wrong size. */
GST_START_TEST (test_buffer_sizes)
{
  GstHarness *h = nms_harness ("mode=iou", P3DC_NMS_IOU, 10);
  GstBus *bus = gst_bus_new ();
  P3dcNmsParams params;
  GstBuffer *out, *in;
  gconstpointer data[2];
  gsize sizes[2];
  Frame frame;
  gchar *text;

  gst_element_set_bus (h->element, bus);
  frame_init (&frame, P3DC_NMS_IOU, 10, 9, 1000);
  data[0] = frame.records;
  data[1] = &frame.count;
  sizes[0] = 10 * 24;
  sizes[1] = 4;
  element_default_params (&params, P3DC_NMS_IOU);
  fail_unless_equals_int (gst_harness_push (h, elemtest_packed_buffer (2, data,
              sizes)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_output (out, &params, &frame, 9, "packed");
  gst_buffer_unref (out);

  /* 3D records in a 2D stream: 36 bytes where 24 are expected */
  sizes[0] = 10 * 36;
  in = gst_buffer_new_allocate (NULL, sizes[0] + 4, NULL);
  gst_buffer_memset (in, 0, 0, sizes[0] + 4);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_ERROR);
  text = elemtest_expect_error (bus, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
      "364 bytes", "244 bytes", NULL);
  g_free (text);

  frame_clear (&frame);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* More boxes per frame than nms supports: a clear error at negotiation. */
GST_START_TEST (test_max_boxes_too_large)
{
  GstHarness *h = gst_harness_new_parse ("nms backend=cpu");
  GstBus *bus = gst_bus_new ();
  gchar *text;

  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (h, "application/x-boxes3d, "
      "max-boxes=(int)70000");
  gst_harness_set_sink_caps_str (h, "application/x-boxes3d");
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_allocate (NULL,
              40, NULL)), GST_FLOW_NOT_NEGOTIATED);
  text = elemtest_expect_error (bus, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
      "70000", "65536", NULL);
  g_free (text);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* mode is a READY property: set while playing, it must not make the
 * element read the negotiated records with another record size (24-byte
 * 2D records read as 36-byte 3D ones run past the tensors). Either the
 * negotiated mode stays in force, or the frame is refused with an error. */
GST_START_TEST (test_mode_set_while_playing_is_safe)
{
  GstHarness *h = nms_harness ("mode=iou", P3DC_NMS_IOU, 16);
  GstElement *nms = gst_harness_find_element (h, "nms");
  GstBus *bus = gst_bus_new ();
  P3dcNmsParams params;
  GstFlowReturn ret;
  Frame frame;

  gst_element_set_bus (h->element, bus);
  frame_init (&frame, P3DC_NMS_IOU, 16, 16, 1100);
  element_default_params (&params, P3DC_NMS_IOU);
  fail_unless_equals_int (gst_harness_push (h, frame_buffer (&frame)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));

  gst_util_set_object_arg (G_OBJECT (nms), "mode", "bev-rotated");
  /* the flag says NULL or READY only, and the element keeps to it */
  {
    gint mode = -1;

    g_object_get (nms, "mode", &mode, NULL);
    fail_unless_equals_int (mode, P3DC_NMS_IOU);
  }
  ret = gst_harness_push (h, frame_buffer (&frame));
  if (ret == GST_FLOW_OK) {
    GstBuffer *out = gst_harness_pull (h);

    assert_output (out, &params, &frame, 16, "mode changed while playing");
    gst_buffer_unref (out);
  } else if (ret == GST_FLOW_NOT_NEGOTIATED) {
    /* the documented behaviour: the mode decides the media type, so the
     * element renegotiates, and 2D boxes upstream cannot feed bev-rotated */
  } else {
    GstMessage *error = elemtest_pop (bus, GST_MESSAGE_ERROR);

    fail_unless_equals_int (ret, GST_FLOW_ERROR);
    fail_unless (error != NULL, "a frame refused without an error message");
    gst_message_unref (error);
  }

  frame_clear (&frame);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_object_unref (nms);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* iou-rule=mmcv keeps what mmcv's nms3d keeps: on a pair whose IoU is
 * 0.14253 exactly and 0.14286 under mmcv's rule (p3dtest-nmscases.h), a
 * threshold of 0.1427 keeps both boxes, then one once the rule changes
 * while playing. */
GST_START_TEST (test_iou_rule)
{
  GstHarness *h = nms_harness ("mode=bev-rotated iou-threshold=0.1427",
      P3DC_NMS_BEV_ROTATED, 4);
  GstElement *nms = gst_harness_find_element (h, "nms");
  guint32 count[2] = { 2, 1 };
  guint rule;
  gint value = -1;
  Frame frame;

  g_object_get (nms, "iou-rule", &value, NULL);
  fail_unless_equals_int (value, P3DC_NMS_IOU_RULE_EXACT);
  frame_init (&frame, P3DC_NMS_BEV_ROTATED, 4, 2, 1200);
  memcpy (frame.records, nms_cases_mmcv_poke, sizeof nms_cases_mmcv_poke);
  for (rule = 0; rule < 2; rule++) {
    GstBuffer *out;

    if (rule == 1)
      gst_util_set_object_arg (G_OBJECT (nms), "iou-rule", "mmcv");
    fail_unless_equals_int (gst_harness_push (h, frame_buffer (&frame)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    elemtest_assert_tensor (out, 1, &count[rule], 4, rule ? "mmcv" : "exact");
    gst_buffer_unref (out);
  }
  g_object_get (nms, "iou-rule", &value, NULL);
  fail_unless_equals_int (value, P3DC_NMS_IOU_RULE_MMCV);
  frame_clear (&frame);
  gst_object_unref (nms);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_property_defaults)
{
  GstElement *nms = gst_element_factory_make ("nms", NULL);
  gfloat iou = 0, distance = 0, score = -1;
  guint offset = 9, pre = 9, post = 9;
  gboolean per_class = TRUE;

  g_object_get (nms, "iou-threshold", &iou, "distance-threshold", &distance,
      "score-threshold", &score, "offset", &offset, "pre-max", &pre,
      "post-max", &post, "per-class", &per_class, NULL);
  fail_unless_equals_float (iou, 0.5f);
  fail_unless_equals_float (distance, 2.0f);
  fail_unless_equals_float (score, -G_MAXFLOAT);
  fail_unless_equals_int (offset, 0);
  fail_unless_equals_int (pre, 0);
  fail_unless_equals_int (post, 0);
  fail_unless (!per_class);
  gst_object_unref (nms);
}

GST_END_TEST;

static Suite *
nms_suite (void)
{
  Suite *s = suite_create ("nms");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_output_matches_library);
  tcase_add_test (tc, test_velocity_follows_boxes);
  tcase_add_test (tc, test_records_beyond_count_ignored);
  tcase_add_test (tc, test_mode_decides_caps);
  tcase_add_test (tc, test_thresholds_change_while_playing);
  tcase_add_test (tc, test_count_above_max_boxes_clamped);
  tcase_add_test (tc, test_nan_records_dropped);
  tcase_add_test (tc, test_empty_frame);
  tcase_add_test (tc, test_timestamps_kept);
  tcase_add_test (tc, test_buffer_sizes);
  tcase_add_test (tc, test_max_boxes_too_large);
  tcase_add_test (tc, test_mode_set_while_playing_is_safe);
  tcase_add_test (tc, test_property_defaults);
  tcase_add_test (tc, test_iou_rule);
  return s;
}

P3D_CHECK_MAIN (nms);
