/* velodyneparse and ousterparse in CUDA memory (needs a GPU): recordings of
 * generated packets (p3dtest-lidargen.c) through pcapparse; memory:CUDAMemory is
 * negotiated (by default too, a device being there), each sweep is one
 * P3dCudaMemory on the device, and its bytes read back from the device
 * directly and through a host map equal the system-memory output; a slow
 * rotation whose revolutions outgrow the first pool (a pool that grows on
 * the device, the points copied over); the sweeps go on into voxelize on
 * the GPU; a device that does not exist is an error. */
#include <string.h>

#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "p3dtest-elem.h"
#include "p3dtest-lidargen.h"
#include "p3dperception.h"
#include "p3dtest.h"

typedef struct
{
  gchar *dir;
  gchar *pcap;
  gchar *metadata;
} Recording;

/* A recording of @gen's packets (Velodyne) or @ogen's (Ouster, with its
 * metadata file), on @port. */
static void
recording_init (Recording * rec, VelodyneGen * gen, OusterGen * ogen)
{
  GPtrArray *packets = g_ptr_array_new ();
  GArray *times = g_array_new (FALSE, FALSE, sizeof (gdouble));
  guint p;

  rec->dir = g_dir_make_tmp ("lidarparse-cuda-XXXXXX", NULL);
  rec->pcap = g_build_filename (rec->dir, "drive.pcap", NULL);
  rec->metadata = NULL;
  if (gen != NULL) {
    for (p = 0; p < gen->packets->len; p++) {
      VelodyneGenPacket *gp = &g_array_index (gen->packets, VelodyneGenPacket,
          p);
      gdouble t = gp->timestamp - g_array_index (gen->packets,
          VelodyneGenPacket, 0).timestamp;

      g_ptr_array_add (packets, gp->data);
      g_array_append_val (times, t);
    }
  } else {
    gchar *json = ouster_gen_metadata_json (&ogen->params.metadata, TRUE);

    for (p = 0; p < ogen->packets->len; p++) {
      gdouble t = p * 1563.0;

      g_ptr_array_add (packets, g_array_index (ogen->packets,
              OusterGenPacket, p).data);
      g_array_append_val (times, t);
    }
    rec->metadata = elemtest_write_file (rec->dir, "os.json", json);
    g_free (json);
  }
  fail_unless (lidar_gen_write_pcap (rec->pcap, packets,
          (gdouble *) times->data, 1700000000, gen ? 2368 : 7502));
  g_ptr_array_unref (packets);
  g_array_unref (times);
}

static void
recording_clear (Recording * rec)
{
  elemtest_remove_dir (rec->dir);
  g_free (rec->dir);
  g_free (rec->pcap);
  g_free (rec->metadata);
}

/* "filesrc ! pcapparse ! <parser> ! @caps ! appsink" for @rec. */
static GPtrArray *
run (const Recording * rec, const gchar * parser, const gchar * caps)
{
  gchar *launch = g_strdup_printf ("filesrc location=\"%s\" ! pcapparse ! "
      "%s%s%s%s ! %s ! appsink name=sink sync=false", rec->pcap, parser,
      rec->metadata ? " metadata=\"" : "", rec->metadata ? rec->metadata : "",
      rec->metadata ? "\"" : "", caps);
  GPtrArray *samples = elemtest_run_pipeline (launch);

  g_free (launch);
  return samples;
}

/* Fails unless every sweep of @cuda is one P3dCudaMemory whose bytes, read
 * from the device and through a host map, equal @system's. */
static void
assert_same_sweeps (GPtrArray * cuda, GPtrArray * system, const gchar * what)
{
  guint s;

  fail_unless_equals_int (cuda->len, system->len);
  fail_unless (cuda->len > 0);
  fail_unless (p3d_caps_is_cuda (gst_sample_get_caps (g_ptr_array_index
              (cuda, 0))));
  for (s = 0; s < cuda->len; s++) {
    GstBuffer *c = elemtest_sample_buffer (cuda, s);
    GstBuffer *h = elemtest_sample_buffer (system, s);
    GBytes *host = elemtest_host_bytes (h, 0);
    GBytes *device = elemtest_device_bytes (c, 0);
    GBytes *mapped = elemtest_host_bytes (c, 0);
    gsize size;
    const guint8 *expected = g_bytes_get_data (host, &size);
    gchar *name = g_strdup_printf ("%s, sweep %u", what, s);

    fail_unless_equals_int (gst_buffer_n_memory (c), 1);
    fail_unless (p3d_is_cuda_memory (gst_buffer_peek_memory (c, 0)));
    fail_unless_equals_uint64 (g_bytes_get_size (device), size);
    fail_unless_equals_uint64 (g_bytes_get_size (mapped), size);
    elemtest_assert_bytes (g_bytes_get_data (device, NULL), expected, size,
        name);
    elemtest_assert_bytes (g_bytes_get_data (mapped, NULL), expected, size,
        name);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (c), GST_BUFFER_PTS (h));
    g_bytes_unref (host);
    g_bytes_unref (device);
    g_bytes_unref (mapped);
    g_free (name);
  }
}

GST_START_TEST (test_velodyne_cuda_memory)
{
  static const gchar *const formats[] = { "xyzit", "xyzi", "xyzir" };
  VelodyneGenParams params;
  VelodyneGen *gen;
  Recording rec;
  guint f, slow;

  for (slow = 0; slow < 2; slow++) {
    velodyne_gen_params_init (&params, P3D_VELODYNE_MODEL_VLP16);
    /* slow: 150 rpm, revolutions of 400 ms that outgrow the first pool */
    params.gap = slow ? 10 : 40;
    params.n_packets = slow ? 1000 : 250;
    gen = velodyne_gen_new (&params);
    recording_init (&rec, gen, NULL);
    for (f = 0; f < G_N_ELEMENTS (formats); f++) {
      gchar *cuda_caps = g_strdup_printf ("application/x-point-cloud"
          "(memory:CUDAMemory),format=%s", formats[f]);
      gchar *system_caps = g_strdup_printf ("application/x-point-cloud,"
          "format=%s", formats[f]);
      GPtrArray *cuda = run (&rec, "velodyneparse", cuda_caps);
      GPtrArray *system = run (&rec, "velodyneparse", system_caps);

      assert_same_sweeps (cuda, system, formats[f]);
      g_ptr_array_unref (cuda);
      g_ptr_array_unref (system);
      g_free (cuda_caps);
      g_free (system_caps);
    }
    recording_clear (&rec);
    velodyne_gen_free (gen);
  }
}

GST_END_TEST;

GST_START_TEST (test_ouster_cuda_memory)
{
  OusterGenParams params;
  OusterGen *gen;
  Recording rec;
  GPtrArray *cuda, *system;

  ouster_gen_params_init (&params, P3D_OUSTER_PROFILE_DUAL, 64, 1024);
  gen = ouster_gen_new (&params);
  recording_init (&rec, NULL, gen);
  cuda = run (&rec, "ousterparse", "application/x-point-cloud"
      "(memory:CUDAMemory),format=xyzit");
  system = run (&rec, "ousterparse", "application/x-point-cloud,format=xyzit");
  fail_unless_equals_int (cuda->len, params.n_frames);
  assert_same_sweeps (cuda, system, "ouster");
  g_ptr_array_unref (cuda);
  g_ptr_array_unref (system);
  recording_clear (&rec);
  ouster_gen_free (gen);
}

GST_END_TEST;

/* With a device, CUDA memory is what the parsers offer first, and the
 * sweeps go on to voxelize on the GPU. */
GST_START_TEST (test_cuda_by_default_into_voxelize)
{
  VelodyneGenParams params;
  VelodyneGen *gen;
  Recording rec;
  GPtrArray *samples;

  velodyne_gen_params_init (&params, P3D_VELODYNE_MODEL_HDL32E);
  params.gap = 40;
  params.n_packets = 250;
  gen = velodyne_gen_new (&params);
  recording_init (&rec, gen, NULL);
  samples = run (&rec, "velodyneparse", "identity");
  fail_unless (samples->len > 0);
  fail_unless (p3d_caps_is_cuda (gst_sample_get_caps (g_ptr_array_index
              (samples, 0))));
  g_ptr_array_unref (samples);
  samples = run (&rec, "velodyneparse", "voxelize backend=cuda");
  fail_unless (samples->len > 0);
  fail_unless (p3d_caps_is_cuda (gst_sample_get_caps (g_ptr_array_index
              (samples, 0))));
  g_ptr_array_unref (samples);
  recording_clear (&rec);
  velodyne_gen_free (gen);
}

GST_END_TEST;

/* A device that does not exist: an error naming it, not a crash. */
GST_START_TEST (test_missing_device)
{
  VelodyneGenParams params;
  VelodyneGen *gen;
  Recording rec;
  gchar *launch;
  GstElement *pipeline;
  GstBus *bus;

  velodyne_gen_params_init (&params, P3D_VELODYNE_MODEL_VLP16);
  params.n_packets = 20;
  gen = velodyne_gen_new (&params);
  recording_init (&rec, gen, NULL);
  launch = g_strdup_printf ("filesrc location=\"%s\" ! pcapparse ! "
      "velodyneparse cuda-device-id=1000 partial-sweeps=true ! "
      "application/x-point-cloud(memory:CUDAMemory) ! fakesink", rec.pcap);
  pipeline = gst_parse_launch (launch, NULL);
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  g_free (elemtest_expect_error (bus, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_NOT_FOUND, "CUDA device 1000", NULL));
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_free (launch);
  recording_clear (&rec);
  velodyne_gen_free (gen);
}

GST_END_TEST;

static Suite *
lidarparse_cuda_suite (void)
{
  Suite *s = suite_create ("lidarparse_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_velodyne_cuda_memory);
  tcase_add_test (tc, test_ouster_cuda_memory);
  tcase_add_test (tc, test_cuda_by_default_into_voxelize);
  tcase_add_test (tc, test_missing_device);
  return s;
}

P3D_CHECK_MAIN (lidarparse_cuda);
