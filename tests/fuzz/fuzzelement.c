/* The shared part of the element fuzz targets (fuzzelement.h). */
#include <stdlib.h>
#include <string.h>

#include <gst/app/app.h>
#include <gst/video/video.h>

#include "fuzzelement.h"

/* Long enough for a loaded machine, short enough to be a hang. */
#define RUN_TIMEOUT (20 * GST_SECOND)
/* Random memories are at most this large: big enough to be any of the
 * small tensors the targets' caps give, and more. */
#define MAX_RANDOM_MEMORY 4096

void
fuzz_reader_init (FuzzReader * reader, const guint8 * data, gsize size)
{
  reader->data = data;
  reader->size = size;
  reader->pos = 0;
}

guint8
fuzz_u8 (FuzzReader * reader)
{
  return reader->pos < reader->size ? reader->data[reader->pos++] : 0;
}

guint
fuzz_below (FuzzReader * reader, guint n)
{
  guint value = fuzz_u8 (reader);

  if (n > 256)
    value = value << 8 | fuzz_u8 (reader);
  return n > 0 ? value % n : 0;
}

gfloat
fuzz_float (FuzzReader * reader)
{
  guint8 kind = fuzz_u8 (reader);

  if (kind & 1) {
    guint32 bits = 0;
    gfloat value;
    guint i;

    for (i = 0; i < 4; i++)
      bits = bits << 8 | fuzz_u8 (reader);
    memcpy (&value, &bits, sizeof (value));
    return value;
  }
  /* -8 .. 8 in steps of 1/16: inside the small grids of the targets */
  return ((gint) fuzz_u8 (reader) - 128) / 16.0f;
}

static void
fill (FuzzReader * reader, guint8 * data, gsize size, gboolean floats)
{
  gsize i;

  if (floats) {
    for (i = 0; i + 4 <= size; i += 4) {
      gfloat value = fuzz_float (reader);

      memcpy (data + i, &value, 4);
    }
  } else {
    /* small integers are the interesting counts and coordinates */
    for (i = 0; i + 4 <= size; i += 4) {
      guint8 kind = fuzz_u8 (reader);
      gint32 value;

      if (kind < 192) {
        value = kind % 24 - 4;
      } else {
        value = (gint32) ((guint32) fuzz_u8 (reader) << 24 |
            (guint32) fuzz_u8 (reader) << 16 | (guint32) fuzz_u8 (reader)
            << 8 | fuzz_u8 (reader));
      }
      memcpy (data + i, &value, 4);
    }
  }
  for (; i < size; i++)
    data[i] = fuzz_u8 (reader);
}

GstBuffer *
fuzz_buffer (FuzzReader * reader, const P3dTensorLayout * layout,
    guint float_tensors)
{
  GstBuffer *buffer = gst_buffer_new ();
  gboolean consistent = fuzz_below (reader, 4) != 0;
  guint n_memories = consistent ? layout->n_tensors : fuzz_below (reader, 6);
  guint i;

  for (i = 0; i < n_memories; i++) {
    gsize size = consistent ? layout->size[i] :
        fuzz_below (reader, MAX_RANDOM_MEMORY + 1);
    guint8 *data = g_malloc0 (MAX (size, 1));

    fill (reader, data, size, (float_tensors >> i) & 1);
    gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, data,
            size, 0, size, data, g_free));
  }
  return buffer;
}

/* The layout that the caps of an output say its buffers have, the most
 * its count may say (0 for a media type without a count) and which tensor
 * the count is (the last, but for boxes, whose velocity may follow it);
 * FALSE for a media type this file does not know (nothing to check). */
static gboolean
output_layout (GstCaps * caps, P3dTensorLayout * layout, guint * capacity,
    guint * count_index)
{
  const gchar *name = gst_structure_get_name (gst_caps_get_structure (caps,
          0));

  if (g_str_equal (name, P3D_MEDIA_TYPE_VOXELS)) {
    P3dVoxelsInfo info;

    if (!p3d_voxels_info_from_caps (&info, caps))
      abort ();
    p3d_voxels_info_get_layout (&info, layout);
    *capacity = info.max_voxels;
  } else if (g_str_equal (name, P3D_MEDIA_TYPE_PILLAR_FEATURES)) {
    P3dPillarsInfo info;

    if (!p3d_pillars_info_from_caps (&info, caps))
      abort ();
    p3d_pillars_info_get_layout (&info, layout);
    *capacity = info.max_voxels;
  } else if (g_str_equal (name, P3D_MEDIA_TYPE_BEV_FEATURES)) {
    P3dBevFeaturesInfo info;

    if (!p3d_bev_features_info_from_caps (&info, caps)
        || !p3d_bev_features_info_get_layout (&info, layout))
      abort ();
    *capacity = 0;
  } else if (g_str_equal (name, P3D_MEDIA_TYPE_BOXES3D)) {
    P3dBoxes3dInfo info;

    if (!p3d_boxes3d_info_from_caps (&info, caps))
      abort ();
    p3d_boxes3d_info_get_layout (&info, layout);
    *capacity = info.max_boxes;
    *count_index = P3D_BOXES_TENSOR_COUNT;
    return TRUE;
  } else if (g_str_equal (name, P3D_MEDIA_TYPE_BOXES2D)) {
    P3dBoxes2dInfo info;

    if (!p3d_boxes2d_info_from_caps (&info, caps))
      abort ();
    p3d_boxes2d_info_get_layout (&info, layout);
    *capacity = info.max_boxes;
  } else {
    return FALSE;
  }
  *count_index = layout->n_tensors - 1;
  return TRUE;
}

/* An output is sized as its caps say, and its count is within the
 * capacity. */
static void
check_output (GstSample * sample)
{
  GstCaps *caps = gst_sample_get_caps (sample);
  GstBuffer *buffer = gst_sample_get_buffer (sample);
  P3dTensorLayout layout;
  GstVideoInfo video;
  GstMapInfo map;
  guint capacity, count_index, i;
  guint32 count;

  if (caps == NULL || buffer == NULL)
    abort ();
  if (gst_video_info_from_caps (&video, caps)) {
    if (gst_buffer_get_size (buffer) < video.size)
      abort ();
    return;
  }
  if (!output_layout (caps, &layout, &capacity, &count_index))
    return;
  if (gst_buffer_n_memory (buffer) != layout.n_tensors)
    abort ();
  for (i = 0; i < layout.n_tensors; i++) {
    if (gst_memory_get_sizes (gst_buffer_peek_memory (buffer, i), NULL,
            NULL) != layout.size[i])
      abort ();
  }
  if (capacity == 0)
    return;
  /* the outputs are in system memory (backend=cpu, appsink's caps) */
  if (!gst_memory_map (gst_buffer_peek_memory (buffer, count_index), &map,
          GST_MAP_READ) || map.size != sizeof (count))
    abort ();
  memcpy (&count, map.data, sizeof (count));
  gst_memory_unmap (gst_buffer_peek_memory (buffer, count_index), &map);
  if (count > capacity)
    abort ();
}

void
fuzz_run_element (GstElement * element, const gchar * sink_pad,
    GstCaps * caps, FuzzReader * reader, FuzzMakeBuffer make_buffer,
    gpointer user_data)
{
  GstElement *pipeline = gst_pipeline_new (NULL);
  GstElement *src = gst_element_factory_make ("appsrc", NULL);
  GstElement *sink = gst_element_factory_make ("appsink", NULL);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *message;
  GstSample *sample;
  GstBuffer *buffer;
  guint index = 0;

  if (src == NULL || sink == NULL)
    abort ();
  g_object_set (src, "caps", caps, "format", GST_FORMAT_TIME, NULL);
  gst_caps_unref (caps);
  /* samples are read after EOS, so appsink must not wait for them */
  g_object_set (sink, "sync", FALSE, "wait-on-eos", FALSE, NULL);
  gst_bin_add_many (GST_BIN (pipeline), src, element, sink, NULL);
  if (!gst_element_link_pads (src, "src", element, sink_pad)
      || !gst_element_link (element, sink))
    goto done;
  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    /* a refusal at start must say why */
    message = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    if (message == NULL)
      abort ();
    gst_message_unref (message);
    goto done;
  }
  while ((buffer = make_buffer (reader, user_data, index)) != NULL) {
    GST_BUFFER_PTS (buffer) = index * 100 * GST_MSECOND;
    GST_BUFFER_DURATION (buffer) = 100 * GST_MSECOND;
    index++;
    if (gst_app_src_push_buffer (GST_APP_SRC (src), buffer) != GST_FLOW_OK)
      break;
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  message = gst_bus_timed_pop_filtered (bus, RUN_TIMEOUT,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  /* neither the end nor an error: a hang */
  if (message == NULL)
    abort ();
  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR) {
    GError *error = NULL;

    gst_message_parse_error (message, &error, NULL);
    if (error == NULL || error->message == NULL || error->message[0] == '\0'
        || !g_utf8_validate (error->message, -1, NULL))
      abort ();
    g_clear_error (&error);
  }
  gst_message_unref (message);
  while ((sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 0))) {
    check_output (sample);
    gst_sample_unref (sample);
  }

done:
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

static void
deinit (void)
{
  /* the leaks tracer of CI's replay reports at gst_deinit() */
  gst_deinit ();
}

void
fuzz_gst_init (void)
{
  if (!gst_is_initialized ()) {
    gst_init (NULL, NULL);
    atexit (deinit);
  }
}
