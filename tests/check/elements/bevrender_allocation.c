/* bevrender's output allocation: a video pool that downstream offers is the
 * one its frames come from, and a pool whose rows are padded (a stride wider
 * than the picture, told by the video meta) gets the same pictures as
 * bevrender's own pool of densely packed rows; without an offer, its own
 * pool. */
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>
#include <gst/video/video.h>

#include "p3dtest-elem.h"
#include "p3dtest.h"

#define PADDING_PIXELS 24

/* Answers the allocation query on the appsink's pad with @pool_out, a video
 * pool whose rows have PADDING_PIXELS more pixels than the picture, and
 * says that the video meta is read. */
static GstPadProbeReturn
offer_padded_pool (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstBufferPool **pool_out = user_data;
  GstQuery *query = GST_PAD_PROBE_INFO_QUERY (info);
  GstVideoAlignment align;
  GstStructure *config;
  GstVideoInfo video;
  GstCaps *caps = NULL;
  GstBufferPool *pool;

  if (GST_QUERY_TYPE (query) != GST_QUERY_ALLOCATION)
    return GST_PAD_PROBE_OK;
  gst_query_parse_allocation (query, &caps, NULL);
  fail_unless (caps != NULL && gst_video_info_from_caps (&video, caps));
  gst_video_alignment_reset (&align);
  align.padding_right = PADDING_PIXELS;
  fail_unless (gst_video_info_align (&video, &align));
  pool = gst_video_buffer_pool_new ();
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, video.size, 2, 0);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_buffer_pool_config_add_option (config,
      GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
  gst_buffer_pool_config_set_video_alignment (config, &align);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  gst_query_add_allocation_pool (query, pool, video.size, 2, 0);
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
  gst_object_replace ((GstObject **) pool_out, GST_OBJECT (pool));
  gst_object_unref (pool);
  return GST_PAD_PROBE_HANDLED;
}

#define LAUNCH "pointcloudtestsrc seed=4 num-buffers=3 ! bevrender " \
  "width=200 height=150 ! video/x-raw,format=RGBA ! appsink name=sink " \
  "sync=false"

/* Runs LAUNCH, with the padded pool offered when @offer; the samples. */
static GPtrArray *
render (gboolean offer, GstBufferPool ** offered)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (LAUNCH, &error);
  GPtrArray *samples = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_sample_unref);
  GstElement *sink;
  GstSample *sample;
  GstMessage *message;
  GstBus *bus;

  fail_unless (pipeline != NULL, "%s", error ? error->message : "?");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  if (offer) {
    GstPad *pad = gst_element_get_static_pad (sink, "sink");

    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
        offer_padded_pool, offered, NULL);
    gst_object_unref (pad);
  }
  bus = gst_element_get_bus (pipeline);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink))) != NULL)
    g_ptr_array_add (samples, sample);
  message = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  if (message != NULL) {
    gchar *text = elemtest_message_text (message);

    fail ("%s", text);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  return samples;
}

GST_START_TEST (test_downstream_pool)
{
  GstBufferPool *offered = NULL;
  GPtrArray *own = render (FALSE, NULL);
  GPtrArray *padded = render (TRUE, &offered);
  guint i, row;

  fail_unless (offered != NULL, "no allocation query reached the sink");
  fail_unless_equals_int (own->len, 3);
  fail_unless_equals_int (padded->len, 3);
  for (i = 0; i < own->len; i++) {
    GstSample *a = g_ptr_array_index (own, i);
    GstSample *b = g_ptr_array_index (padded, i);
    GstBuffer *dense = gst_sample_get_buffer (a);
    GstBuffer *wide = gst_sample_get_buffer (b);
    GstVideoFrame x, y;
    GstVideoInfo info;
    guint row_bytes;

    fail_unless (gst_video_info_from_caps (&info, gst_sample_get_caps (b)));
    /* the padded buffers are the offered pool's, with their stride told */
    fail_unless (wide->pool == offered, "frame %u is not from the offered "
        "pool", i);
    fail_unless (dense->pool != offered);
    fail_unless (gst_buffer_get_video_meta (wide) != NULL);
    fail_unless (gst_video_frame_map (&x, &info, dense, GST_MAP_READ));
    fail_unless (gst_video_frame_map (&y, &info, wide, GST_MAP_READ));
    row_bytes = GST_VIDEO_INFO_WIDTH (&info) * 4;
    fail_unless_equals_int (GST_VIDEO_FRAME_PLANE_STRIDE (&x, 0), row_bytes);
    fail_unless_equals_int (GST_VIDEO_FRAME_PLANE_STRIDE (&y, 0),
        row_bytes + PADDING_PIXELS * 4);
    for (row = 0; row < (guint) GST_VIDEO_INFO_HEIGHT (&info); row++) {
      const guint8 *p = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&x, 0) +
          (gsize) row * GST_VIDEO_FRAME_PLANE_STRIDE (&x, 0);
      const guint8 *q = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&y, 0) +
          (gsize) row * GST_VIDEO_FRAME_PLANE_STRIDE (&y, 0);

      if (memcmp (p, q, row_bytes) != 0)
        fail ("frame %u, row %u differs between the dense and the padded "
            "pool", i, row);
    }
    gst_video_frame_unmap (&x);
    gst_video_frame_unmap (&y);
  }
  g_ptr_array_unref (own);
  g_ptr_array_unref (padded);
  gst_object_unref (offered);
}

GST_END_TEST;

static Suite *
bevrender_allocation_suite (void)
{
  Suite *s = suite_create ("bevrender_allocation");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_downstream_pool);
  return s;
}

P3D_CHECK_MAIN (bevrender_allocation);
