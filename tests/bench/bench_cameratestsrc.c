/* cameratestsrc on one core: the rendering of one camera's frame (the
 * trace of every pixel's ray through the street, then the colour image,
 * the depth or the classes) with the library alone, and the element in a
 * pipeline to fakesink, in milliseconds per frame and frames per second.
 *
 *   bench_cameratestsrc [--frames N] [--calibration FILE] [--camera K]
 *       [--seed S] [--pipeline]
 *
 * Defaults: 200 frames, camera 0 of examples/data/rig-nuscenes-704x256.json
 * (704 x 256) and the street's defaults, seed 0. Frames are frames 0, 1, 2
 * ... of the moving street, as the element renders them. Each frame is
 * timed by the thread's CPU clock, which counts the time on the core only:
 * on a machine shared with other work the wall clock counts the time the
 * thread waited for a core too (both are printed). --pipeline also runs
 * "cameratestsrc ! fakesink" (the plugin must be on GST_PLUGIN_PATH) and
 * gives the frames per second of its process's CPU time and of the wall
 * clock. Prints a markdown table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gst/gst.h>

#include "cameratestsrc-render.h"

typedef struct
{
  P3dStreet *street;
  P3dCameraRender *render;
  guint64 frame;
  guint8 *pixels;
  gsize stride;
  gint what;
} Work;

enum
{
  TRACE,
  RGB,
  DEPTH,
  LABELS,
};

static void
render_frame (gpointer user_data)
{
  Work *work = user_data;

  p3d_street_set_frame (work->street, work->frame, 10, 1);
  p3d_camera_render_trace (work->render, work->street);
  switch (work->what) {
    case RGB:
      p3d_camera_render_rgb (work->render, work->street, work->frame,
          work->pixels, work->stride);
      break;
    case DEPTH:
      p3d_camera_render_depth (work->render, work->pixels, work->stride);
      break;
    case LABELS:
      p3d_camera_render_labels (work->render, work->street, work->pixels,
          work->stride);
      break;
    default:
      break;
  }
  work->frame++;
}

static gdouble
clock_us (clockid_t clock)
{
  struct timespec now;

  clock_gettime (clock, &now);
  return now.tv_sec * 1e6 + now.tv_nsec / 1e3;
}

static gint
compare_doubles (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return x < y ? -1 : (x > y);
}

/* Times @frames frames after 5 untimed ones; prints the CPU time's median,
 * p10 and p90 and the wall clock's median. */
static void
time_frames (const gchar * name, Work * work, guint frames)
{
  gdouble *cpu = g_new (gdouble, frames), *wall = g_new (gdouble, frames);
  guint i;

  work->frame = 0;
  for (i = 0; i < 5; i++)
    render_frame (work);
  for (i = 0; i < frames; i++) {
    gdouble cpu_start = clock_us (CLOCK_THREAD_CPUTIME_ID);
    gdouble wall_start = clock_us (CLOCK_MONOTONIC);

    render_frame (work);
    cpu[i] = clock_us (CLOCK_THREAD_CPUTIME_ID) - cpu_start;
    wall[i] = clock_us (CLOCK_MONOTONIC) - wall_start;
  }
  qsort (cpu, frames, sizeof (gdouble), compare_doubles);
  qsort (wall, frames, sizeof (gdouble), compare_doubles);
  printf ("| %s | %.2f | %.2f | %.2f | %.1f | %.2f |\n", name,
      cpu[frames / 2] / 1000.0, cpu[frames / 10] / 1000.0,
      cpu[frames * 9 / 10] / 1000.0, 1e6 / cpu[frames / 2],
      wall[frames / 2] / 1000.0);
  g_free (cpu);
  g_free (wall);
}

/* The element in "cameratestsrc ! fakesink" for @frames frames: frames per
 * second of the process's CPU time and of the wall clock, from PLAYING to
 * EOS. */
static void
pipeline_fps (const gchar * calibration, guint camera, guint64 seed,
    guint frames, const gchar * caps)
{
  gchar *description = g_strdup_printf ("cameratestsrc calibration=%s "
      "camera=%u seed=%" G_GUINT64_FORMAT " num-buffers=%u ! %s ! fakesink "
      "sync=false", calibration, camera, seed, frames, caps);
  GstElement *pipeline = gst_parse_launch (description, NULL);
  GstBus *bus;
  GstMessage *message;
  gdouble wall, cpu;

  if (pipeline == NULL) {
    fprintf (stderr, "cannot build '%s': is the plugin on "
        "GST_PLUGIN_PATH?\n", description);
    exit (1);
  }
  bus = gst_element_get_bus (pipeline);
  wall = clock_us (CLOCK_MONOTONIC);
  cpu = clock_us (CLOCK_PROCESS_CPUTIME_ID);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  message = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  wall = clock_us (CLOCK_MONOTONIC) - wall;
  cpu = clock_us (CLOCK_PROCESS_CPUTIME_ID) - cpu;
  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR) {
    fprintf (stderr, "'%s' failed\n", description);
    exit (1);
  }
  gst_message_unref (message);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  printf ("| cameratestsrc ! %s ! fakesink | | | | %.1f | %.2f |\n", caps,
      frames * 1e6 / cpu, wall / frames / 1000.0);
  g_free (description);
}

int
main (int argc, char **argv)
{
  const gchar *calibration_path = RIG_FILE;
  guint frames = 200, camera = 0, i;
  guint64 seed = 0;
  gboolean pipeline = FALSE;
  P3dCalibration *calibration;
  P3dCameraRenderParams params;
  P3dStreetParams street_params;
  P3dCamera pinhole;
  GError *error = NULL;
  gchar *why = NULL;
  Work work;

  for (i = 1; i < (guint) argc; i++) {
    if (strcmp (argv[i], "--frames") == 0 && i + 1 < (guint) argc)
      frames = (guint) atoi (argv[++i]);
    else if (strcmp (argv[i], "--calibration") == 0 && i + 1 < (guint) argc)
      calibration_path = argv[++i];
    else if (strcmp (argv[i], "--camera") == 0 && i + 1 < (guint) argc)
      camera = (guint) atoi (argv[++i]);
    else if (strcmp (argv[i], "--seed") == 0 && i + 1 < (guint) argc)
      seed = g_ascii_strtoull (argv[++i], NULL, 10);
    else if (strcmp (argv[i], "--pipeline") == 0)
      pipeline = TRUE;
    else {
      fprintf (stderr, "usage: %s [--frames N] [--calibration FILE] "
          "[--camera K] [--seed S] [--pipeline]\n", argv[0]);
      return 2;
    }
  }
  frames = MAX (frames, 10);

  calibration = p3d_calibration_load (calibration_path, &error);
  if (calibration == NULL) {
    fprintf (stderr, "%s\n", error->message);
    return 1;
  }
  if (camera >= calibration->n_cameras
      || !p3d_camera_init (&pinhole, &calibration->cameras[camera],
          &calibration->image_sizes[camera], &why)) {
    fprintf (stderr, "camera %u of %s cannot be used: %s\n", camera,
        calibration_path, why ? why : "no such camera");
    return 1;
  }
  memset (&params, 0, sizeof (params));
  params.width = pinhole.width > 0 ? pinhole.width : 704;
  params.height = pinhole.height > 0 ? pinhole.height : 256;
  params.camera_index = camera;
  params.sun_azimuth = 150.0;
  params.sun_elevation = 55.0;
  params.noise = 2.0;
  p3d_street_params_init (&street_params);
  street_params.seed = seed;

  memset (&work, 0, sizeof (work));
  work.street = p3d_street_new (&street_params);
  work.render = p3d_camera_render_new (&pinhole, &params);
  work.stride = (gsize) params.width * 3;
  work.pixels = g_malloc (work.stride * params.height);

  printf ("cameratestsrc, camera %u (%s) of %s: %u x %u pixels, %u objects "
      "and %s, %u frames each, one core\n\n", camera,
      calibration->names[camera], calibration_path, params.width,
      params.height, p3d_street_get_n_objects (work.street),
      street_params.walls ? "walls" : "no walls", frames);
  printf ("| what | CPU ms, median | p10 | p90 | frames/s (CPU) | wall ms, "
      "median |\n");
  printf ("| --- | --- | --- | --- | --- | --- |\n");
  work.what = TRACE;
  time_frames ("trace (every pixel's ray)", &work, frames);
  work.what = RGB;
  time_frames ("trace + colour image (emit=rgb, RGB)", &work, frames);
  work.what = DEPTH;
  time_frames ("trace + depth (emit=depth)", &work, frames);
  work.what = LABELS;
  time_frames ("trace + classes (emit=labels)", &work, frames);

  if (pipeline) {
    gst_init (&argc, &argv);
    pipeline_fps (calibration_path, camera, seed, frames,
        "video/x-raw,format=RGB");
    pipeline_fps (calibration_path, camera, seed, frames,
        "video/x-raw,format=I420");
  }

  g_free (work.pixels);
  p3d_camera_render_free (work.render);
  p3d_street_free (work.street);
  p3d_calibration_free (calibration);
  return 0;
}
