/* Embedding gst-perception in a C application.
 *
 * One pipeline with two branches, fed from memory with appsrc and drained
 * with appsink, as an application that owns its sensor and its network
 * would use the plugin:
 *
 *   appsrc name=points ! voxelize ! pillarfeat ! appsink name=features
 *   appsrc name=candidates ! nms ! appsink name=kept
 *
 * The points branch turns lidar sweeps into the network's input; the box
 * branch takes the network's raw boxes and keeps the best ones. Here the
 * sweeps are a synthetic ring of points and the "network" proposes two
 * overlapping boxes per object, so the program runs anywhere. Errors from
 * the bus end the program with a message; --bad-input pushes a truncated
 * sweep to show that path (the program then exits 3).
 *
 *   perception-app [--frames N] [--bad-input]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>

#define POINTS_PER_SWEEP 4096
#define OBJECTS 8
#define MAX_BOXES 64

typedef struct
{
  gfloat x, y, z, dx, dy, dz, yaw, score;
  gint32 label;
} Box3d;                        /* 36 bytes: docs/media-types.md */

/* A sweep of xyzi points: a ring around the sensor and a wall. */
static GstBuffer *
make_sweep (guint frame)
{
  gsize size = POINTS_PER_SWEEP * 4 * sizeof (gfloat);
  gfloat *p = g_malloc (size);
  guint i;

  for (i = 0; i < POINTS_PER_SWEEP; i++) {
    gdouble angle = 2.0 * G_PI * i / POINTS_PER_SWEEP;
    gdouble radius = (i % 2) ? 10.0 + 0.01 * frame : 30.0;

    p[i * 4 + 0] = (gfloat) (radius * cos (angle)) + 35.0f;
    p[i * 4 + 1] = (gfloat) (radius * sin (angle));
    p[i * 4 + 2] = (i % 2) ? -1.5f : 0.5f;
    p[i * 4 + 3] = 0.5f;
  }
  return gst_buffer_new_wrapped (p, size);
}

/* The boxes tensor then the count tensor: two candidates per object, the
 * second a slightly shifted copy with a lower score. */
static GstBuffer *
make_candidates (guint frame)
{
  Box3d *boxes = g_new0 (Box3d, MAX_BOXES);
  guint32 *count = g_new (guint32, 1);
  GstBuffer *buffer = gst_buffer_new ();
  guint i;

  for (i = 0; i < OBJECTS; i++) {
    Box3d car = { 10.0f + 6.0f * i, -4.0f + i, -1.0f, 4.5f, 1.9f, 1.6f,
      0.1f * i, 0.9f - 0.05f * i, 0
    };

    car.x += 0.1f * frame;
    boxes[2 * i] = car;
    car.x += 0.3f;
    car.score -= 0.2f;
    boxes[2 * i + 1] = car;
  }
  *count = 2 * OBJECTS;
  gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, boxes,
          MAX_BOXES * sizeof (Box3d), 0, MAX_BOXES * sizeof (Box3d), boxes,
          g_free));
  gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, count,
          sizeof (guint32), 0, sizeof (guint32), count, g_free));
  return buffer;
}

/* Stops at the first error on the bus; returns FALSE then. */
static gboolean
check_bus (GstElement * pipeline)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg;
  gboolean ok = TRUE;

  while ((msg = gst_bus_pop_filtered (bus,
              GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))) {
    GError *error = NULL;
    gchar *debug = NULL;

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      gst_message_parse_error (msg, &error, &debug);
      g_printerr ("error from %s: %s\n  (%s)\n", GST_OBJECT_NAME (msg->src),
          error->message, debug ? debug : "");
      ok = FALSE;
    } else {
      gst_message_parse_warning (msg, &error, &debug);
      g_printerr ("warning from %s: %s\n", GST_OBJECT_NAME (msg->src),
          error->message);
    }
    g_clear_error (&error);
    g_free (debug);
    gst_message_unref (msg);
  }
  gst_object_unref (bus);
  return ok;
}

/* Reads one uint32 count tensor out of a sample's buffer. */
static guint32
sample_count (GstSample * sample, guint tensor)
{
  GstBuffer *buffer = gst_sample_get_buffer (sample);
  GstMemory *mem = gst_buffer_peek_memory (buffer, tensor);
  GstMapInfo info;
  guint32 count = 0;

  /* map tensors one at a time, never the whole buffer */
  if (gst_memory_map (mem, &info, GST_MAP_READ)) {
    memcpy (&count, info.data, sizeof (count));
    gst_memory_unmap (mem, &info);
  }
  return count;
}

static void
print_kept (GstSample * sample, guint frame)
{
  GstBuffer *buffer = gst_sample_get_buffer (sample);
  GstMemory *mem = gst_buffer_peek_memory (buffer, 0);
  guint32 kept = sample_count (sample, 1), i;
  GstMapInfo info;

  g_print ("frame %u: %u boxes kept of %u candidates\n", frame, kept,
      2 * OBJECTS);
  if (frame == 0 && gst_memory_map (mem, &info, GST_MAP_READ)) {
    const Box3d *boxes = (const Box3d *) info.data;

    for (i = 0; i < kept; i++)
      g_print ("  box %u: x=%.2f y=%.2f yaw=%.2f score=%.2f\n", i,
          boxes[i].x, boxes[i].y, boxes[i].yaw, boxes[i].score);
    gst_memory_unmap (mem, &info);
  }
}

int
main (int argc, char **argv)
{
  gint frames = 5;
  gboolean bad_input = FALSE;
  GOptionEntry entries[] = {
    {"frames", 'n', 0, G_OPTION_ARG_INT, &frames, "Frames to push", "N"},
    {"bad-input", 0, 0, G_OPTION_ARG_NONE, &bad_input,
        "Push a truncated sweep to show how errors arrive", NULL},
    {NULL},
  };
  GOptionContext *context = g_option_context_new ("- gst-perception demo");
  GError *error = NULL;
  GstElement *pipeline, *points, *candidates, *features, *kept;
  gint status = 0, frame;

  g_option_context_add_main_entries (context, entries, NULL);
  g_option_context_add_group (context, gst_init_get_option_group ());
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 2;
  }
  g_option_context_free (context);

  pipeline = gst_parse_launch ("appsrc name=points format=time "
      "caps=application/x-point-cloud,format=xyzi "
      "! voxelize ! pillarfeat ! appsink name=features sync=false "
      "appsrc name=candidates format=time "
      "caps=application/x-boxes3d,max-boxes=" G_STRINGIFY (MAX_BOXES)
      " ! nms mode=bev-rotated iou-threshold=0.1 "
      "! appsink name=kept sync=false", &error);
  if (pipeline == NULL) {
    g_printerr ("cannot create the pipeline (is the perception plugin on "
        "GST_PLUGIN_PATH?): %s\n", error->message);
    return 2;
  }
  points = gst_bin_get_by_name (GST_BIN (pipeline), "points");
  candidates = gst_bin_get_by_name (GST_BIN (pipeline), "candidates");
  features = gst_bin_get_by_name (GST_BIN (pipeline), "features");
  kept = gst_bin_get_by_name (GST_BIN (pipeline), "kept");
  gst_element_set_state (pipeline, GST_STATE_PLAYING);

  for (frame = 0; frame < frames && status == 0; frame++) {
    GstBuffer *sweep = make_sweep (frame), *boxes = make_candidates (frame);
    GstSample *sample;

    GST_BUFFER_PTS (sweep) = GST_BUFFER_PTS (boxes) = frame * GST_SECOND / 10;
    if (bad_input && frame == frames - 1)
      gst_buffer_resize (sweep, 0, 17); /* not a whole number of points */
    gst_app_src_push_buffer (GST_APP_SRC (points), sweep);
    gst_app_src_push_buffer (GST_APP_SRC (candidates), boxes);

    sample = gst_app_sink_try_pull_sample (GST_APP_SINK (features),
        5 * GST_SECOND);
    if (sample) {
      g_print ("frame %d: %u pillars\n", frame, sample_count (sample, 2));
      gst_sample_unref (sample);
    }
    sample = gst_app_sink_try_pull_sample (GST_APP_SINK (kept), 5 * GST_SECOND);
    if (sample) {
      print_kept (sample, frame);
      gst_sample_unref (sample);
    }
    if (!check_bus (pipeline))
      status = 3;
  }
  gst_app_src_end_of_stream (GST_APP_SRC (points));
  gst_app_src_end_of_stream (GST_APP_SRC (candidates));
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (points);
  gst_object_unref (candidates);
  gst_object_unref (features);
  gst_object_unref (kept);
  gst_object_unref (pipeline);
  return status;
}
