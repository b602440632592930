/* What the lidar parser fuzz targets share (see fuzzlidar.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "fuzzlidar.h"
#include "p3dperception.h"

static GstPadProbeReturn
check_sweep (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER (info);
  GstCaps *caps = gst_pad_get_current_caps (pad);
  P3dPointCloudInfo cloud;
  GstMapInfo map;
  gsize stride, i;

  if (caps == NULL || !p3d_point_cloud_info_from_caps (&cloud, caps))
    abort ();
  gst_caps_unref (caps);
  stride = P3D_POINT_CLOUD_INFO_STRIDE (&cloud);
  if (gst_buffer_n_memory (buffer) != 1
      || gst_buffer_get_size (buffer) % stride != 0
      || !GST_BUFFER_PTS_IS_VALID (buffer))
    abort ();
  if (!gst_buffer_map (buffer, &map, GST_MAP_READ))
    abort ();
  for (i = 0; i < map.size / sizeof (gfloat); i++)
    if (!isfinite (((const gfloat *) map.data)[i]))
      abort ();
  gst_buffer_unmap (buffer, &map);
  return GST_PAD_PROBE_OK;
}

void
fuzz_lidar_watch_sweeps (GstElement * parser)
{
  GstPad *pad = gst_element_get_static_pad (parser, "src");

  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, check_sweep, NULL, NULL);
  gst_object_unref (pad);
}

static gchar *folder;
static gchar *path;

static void
remove_folder (void)
{
  GDir *dir = g_dir_open (folder, 0, NULL);
  const gchar *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
    gchar *file = g_build_filename (folder, name, NULL);

    g_unlink (file);
    g_free (file);
  }
  if (dir != NULL)
    g_dir_close (dir);
  g_rmdir (folder);
  g_free (folder);
  g_free (path);
}

const gchar *
fuzz_lidar_file (const gchar * name, const gchar * text, gsize length)
{
  if (folder == NULL) {
    folder = g_dir_make_tmp ("fuzzlidar-XXXXXX", NULL);
    if (folder == NULL)
      abort ();
    atexit (remove_folder);
  }
  g_free (path);
  path = g_build_filename (folder, name, NULL);
  if (!g_file_set_contents (path, text, length, NULL))
    abort ();
  return path;
}
