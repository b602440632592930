/* cameratestsrc's renderer (gst/cameratestsrc-render.h) on hand-placed
 * objects: depths and classes of a box in front of the camera worked out
 * by hand, occlusion, objects behind the camera or around it, the sun's
 * light and the shadows on the ground, the sensor noise, and every pixel
 * of a random street against a float64 brute-force ray caster.
 *
 * The camera: 160 x 64 pixels, fx = fy = 80, principal point (80, 16),
 * looking along +x from (0.4, 0, -0.3) in the lidar frame, level, so 1.43 m
 * above the ground (sensor-height 1.73). Pixel (u, v)'s ray is
 * (1, -(u - 80) / 80, -(v - 16) / 80) per metre of depth. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>

#include "cameratestsrc-render.h"
#include "p3dtest.h"

#define WIDTH 160
#define HEIGHT 64

typedef struct
{
  P3dStreet *street;
  P3dCameraRender *render;
  P3dCamera camera;
} Scene;

static void
front_camera (P3dCamera * camera)
{
  static const gdouble intrinsics[16] = {
    80, 0, 80, 0, 0, 80, 16, 0, 0, 0, 1, 0, 0, 0, 0, 1
  };
  static const gdouble to_lidar[16] = {
    0, 0, 1, 0.4, -1, 0, 0, 0, 0, -1, 0, -0.3, 0, 0, 0, 1
  };
  P3dCalibrationImageSize size = { WIDTH, HEIGHT };
  P3dcCameraCalib calib;
  gchar *why = NULL;

  memcpy (calib.intrinsics, intrinsics, sizeof (intrinsics));
  memcpy (calib.camera_to_lidar, to_lidar, sizeof (to_lidar));
  memset (calib.img_aug, 0, sizeof (calib.img_aug));
  fail_unless (p3d_camera_init (camera, &calib, &size, &why), "%s", why);
}

/* An empty street (ground only, unless @walls) seen by the front camera,
 * with the sun at @azimuth, @elevation and no noise. */
static void
scene_init (Scene * scene, gboolean walls, gdouble azimuth, gdouble elevation)
{
  P3dStreetParams params;
  P3dCameraRenderParams render_params;

  p3d_street_params_init (&params);
  params.cars = params.pedestrians = params.cyclists = 0;
  params.walls = walls;
  scene->street = p3d_street_new (&params);
  front_camera (&scene->camera);
  memset (&render_params, 0, sizeof (render_params));
  render_params.width = WIDTH;
  render_params.height = HEIGHT;
  render_params.sun_azimuth = azimuth;
  render_params.sun_elevation = elevation;
  scene->render = p3d_camera_render_new (&scene->camera, &render_params);
  fail_unless (scene->render != NULL);
}

static void
scene_clear (Scene * scene)
{
  p3d_camera_render_free (scene->render);
  p3d_street_free (scene->street);
}

static void
add_object (Scene * scene, P3dStreetLabel label, gdouble x, gdouble y,
    gdouble yaw, gdouble dx, gdouble dy, gdouble dz)
{
  P3dStreetObject object = { label, x, y, yaw, dx, dy, dz, 0, 0, 0, 0.5 };

  p3d_street_add_object (scene->street, &object);
}

static guint16
depth_mm (guint8 * depth, gint column, gint row)
{
  const guint8 *p = depth + ((gsize) row * WIDTH + column) * 2;

  return (guint16) (p[0] | (p[1] << 8));
}

/* The depth (mm) and class images of the street's current frame. */
static void
render_depth_labels (Scene * scene, guint8 * depth, guint8 * labels)
{
  p3d_camera_render_trace (scene->render, scene->street);
  p3d_camera_render_depth (scene->render, depth, WIDTH * 2);
  p3d_camera_render_labels (scene->render, scene->street, labels, WIDTH);
}

/* A car 4 x 2 x 1.5 m centred 10.4 m ahead: its back face is 8 m in front
 * of the camera, from y = -1 to 1 and from the ground (z = -1.73) to
 * z = -0.23, so it covers u = 80 -+ 80 / 8 = 70 .. 90 and
 * v = 16 - 10 (z + 0.3) = 15.3 .. 30.3. */
GST_START_TEST (test_box_in_front)
{
  guint8 depth[WIDTH * HEIGHT * 2], labels[WIDTH * HEIGHT];
  Scene scene;
  gint row, column;

  scene_init (&scene, FALSE, 150.0, 55.0);
  add_object (&scene, P3D_STREET_LABEL_CAR, 10.4, 0.0, 0.0, 4.0, 2.0, 1.5);
  render_depth_labels (&scene, depth, labels);

  for (row = 16; row <= 30; row++)
    for (column = 71; column <= 89; column++) {
      fail_unless_equals_int (depth_mm (depth, column, row), 8000);
      fail_unless_equals_int (labels[row * WIDTH + column],
          P3D_CAMERA_CLASS_CAR);
      fail_unless (fabsf (p3d_camera_render_get_depth (scene.render, column,
                  row) - 8.0f) < 1e-5f);
    }
  /* beside it (column 69: y = 1.1), the ground 1.43 * 80 / 9 m ahead */
  fail_unless_equals_int (depth_mm (depth, 69, 25), 12711);
  fail_unless (labels[25 * WIDTH + 69] != P3D_CAMERA_CLASS_CAR);
  /* below it (row 31), the ground before it: 1.43 * 80 / 15 = 7.627 m */
  fail_unless_equals_int (depth_mm (depth, 80, 31), 7627);
  fail_unless_equals_int (labels[31 * WIDTH + 80], P3D_CAMERA_CLASS_ROAD);
  /* above it (row 15 rises 0.1 m in 8 m: over the roof), the sky */
  fail_unless_equals_int (depth_mm (depth, 80, 15), 0);
  fail_unless_equals_int (labels[15 * WIDTH + 80], P3D_CAMERA_CLASS_SKY);

  /* a pedestrian in front of it hides it: 0.7 m deep, its face 5.65 m
   * from the camera (x = 6.05), at u = 80 - 80 * 0.3 / 5.65 = 75.75 */
  add_object (&scene, P3D_STREET_LABEL_PEDESTRIAN, 6.4, 0.3, 0.0, 0.7, 0.7,
      1.8);
  render_depth_labels (&scene, depth, labels);
  fail_unless_equals_int (depth_mm (depth, 76, 25), 5650);
  fail_unless_equals_int (labels[25 * WIDTH + 76], P3D_CAMERA_CLASS_PEDESTRIAN);
  fail_unless_equals_int (depth_mm (depth, 88, 25), 8000);
  scene_clear (&scene);
}

GST_END_TEST;

/* Nothing behind the camera shows; a box around the camera does not
 * either (its faces are seen from inside); a box reaching from behind the
 * camera to 3 m in front shows its end at 3 m. */
GST_START_TEST (test_behind_and_around)
{
  guint8 depth[WIDTH * HEIGHT * 2], labels[WIDTH * HEIGHT], empty[WIDTH *
      HEIGHT * 2];
  Scene scene;

  scene_init (&scene, FALSE, 150.0, 55.0);
  p3d_camera_render_trace (scene.render, scene.street);
  p3d_camera_render_depth (scene.render, empty, WIDTH * 2);

  add_object (&scene, P3D_STREET_LABEL_CAR, -6.0, 0.0, 0.0, 4.0, 2.0, 3.0);
  render_depth_labels (&scene, depth, labels);
  fail_unless (memcmp (depth, empty, sizeof (empty)) == 0);

  p3d_street_clear_objects (scene.street);
  add_object (&scene, P3D_STREET_LABEL_CAR, 0.4, 0.0, 0.0, 2.0, 2.0, 3.0);
  render_depth_labels (&scene, depth, labels);
  fail_unless (memcmp (depth, empty, sizeof (empty)) == 0);

  /* from x = -2 to 3.4: its far end 3 m ahead, 3 m tall, 4 m wide */
  p3d_street_clear_objects (scene.street);
  add_object (&scene, P3D_STREET_LABEL_CYCLIST, 0.7, 0.0, 0.0, 5.4, 4.0, 3.0);
  render_depth_labels (&scene, depth, labels);
  fail_unless (memcmp (depth, empty, sizeof (empty)) == 0);
  p3d_street_clear_objects (scene.street);
  add_object (&scene, P3D_STREET_LABEL_CYCLIST, 2.9, 5.0, 0.0, 5.4, 4.0, 3.0);
  render_depth_labels (&scene, depth, labels);
  /* its right face (y = 3) from x = 0.2 to 5.6: column 0 (y = x - 0.4)
   * meets it at 3.0 m */
  fail_unless_equals_int (depth_mm (depth, 0, 20), 3000);
  fail_unless_equals_int (labels[20 * WIDTH + 0], P3D_CAMERA_CLASS_CYCLIST);
  scene_clear (&scene);
}

GST_END_TEST;

static guint
brightness (const guint8 * rgb, gint column, gint row)
{
  const guint8 *p = rgb + ((gsize) row * WIDTH + column) * 3;

  return p[0] + p[1] + p[2];
}

static void
render_rgb (Scene * scene, guint8 * rgb)
{
  p3d_camera_render_trace (scene->render, scene->street);
  p3d_camera_render_rgb (scene->render, scene->street, 0, rgb, WIDTH * 3);
}

/* The car's back face (its normal -x) is lit by a sun behind the camera
 * and in the shade of one ahead; its shadow, with the sun at 45° from the
 * left (+y), falls 1.5 m to its right (y from -2.5 to 1), where the ground
 * 8.17 m ahead at column 100 (y = -2.04, row 30) lies, and not with the
 * sun from the right. */
GST_START_TEST (test_light_and_shadow)
{
  guint8 lit[WIDTH * HEIGHT * 3], shade[WIDTH * HEIGHT * 3];
  Scene scene;

  scene_init (&scene, FALSE, 180.0, 30.0);
  add_object (&scene, P3D_STREET_LABEL_CAR, 10.4, 0.0, 0.0, 4.0, 2.0, 1.5);
  render_rgb (&scene, lit);
  scene_clear (&scene);
  scene_init (&scene, FALSE, 0.0, 30.0);
  add_object (&scene, P3D_STREET_LABEL_CAR, 10.4, 0.0, 0.0, 4.0, 2.0, 1.5);
  render_rgb (&scene, shade);
  scene_clear (&scene);
  fail_unless (brightness (lit, 80, 22) > brightness (shade, 80, 22) + 20,
      "lit %u, shaded %u", brightness (lit, 80, 22),
      brightness (shade, 80, 22));
  /* the ground faces up: the same light from both */
  fail_unless_equals_int (brightness (lit, 80, 50), brightness (shade, 80, 50));

  scene_init (&scene, FALSE, 90.0, 45.0);
  add_object (&scene, P3D_STREET_LABEL_CAR, 10.4, 0.0, 0.0, 4.0, 2.0, 1.5);
  render_rgb (&scene, shade);
  scene_clear (&scene);
  scene_init (&scene, FALSE, -90.0, 45.0);
  add_object (&scene, P3D_STREET_LABEL_CAR, 10.4, 0.0, 0.0, 4.0, 2.0, 1.5);
  render_rgb (&scene, lit);
  scene_clear (&scene);
  fail_unless (brightness (shade, 100, 30) * 10 < brightness (lit, 100,
          30) * 7, "shadow %u, sunlit %u", brightness (shade, 100, 30),
      brightness (lit, 100, 30));
  /* out of the shadow (column 130, y = -5.1): the same ground */
  fail_unless_equals_int (brightness (shade, 130, 30),
      brightness (lit, 130, 30));
}

GST_END_TEST;

/* Noise: none at 0; otherwise its spread is what was asked, it differs
 * between frames and between the cameras of a rig, and not between runs. */
GST_START_TEST (test_noise)
{
  static guint8 quiet[WIDTH * HEIGHT * 3], noisy[WIDTH * HEIGHT * 3],
      again[WIDTH * HEIGHT * 3], other[WIDTH * HEIGHT * 3];
  P3dCameraRenderParams params;
  P3dCameraRender *render;
  Scene scene;
  gdouble sum = 0.0, sum2 = 0.0, sigma;
  gsize i, n = sizeof (quiet);

  scene_init (&scene, TRUE, 150.0, 55.0);
  render_rgb (&scene, quiet);
  memset (&params, 0, sizeof (params));
  params.width = WIDTH;
  params.height = HEIGHT;
  params.sun_azimuth = 150.0;
  params.sun_elevation = 55.0;
  params.noise = 8.0;
  render = p3d_camera_render_new (&scene.camera, &params);
  p3d_camera_render_trace (render, scene.street);
  p3d_camera_render_rgb (render, scene.street, 7, noisy, WIDTH * 3);
  p3d_camera_render_rgb (render, scene.street, 7, again, WIDTH * 3);
  fail_unless (memcmp (noisy, again, n) == 0);
  p3d_camera_render_rgb (render, scene.street, 8, other, WIDTH * 3);
  fail_unless (memcmp (noisy, other, n) != 0);
  for (i = 0; i < n; i++) {
    gdouble d = (gdouble) noisy[i] - quiet[i];

    sum += d;
    sum2 += d * d;
  }
  sigma = sqrt (sum2 / n - (sum / n) * (sum / n));
  /* clipping at 0 and 255 narrows it a little */
  fail_unless (sigma > 7.0 && sigma < 8.5, "noise sigma %g", sigma);
  fail_unless (fabs (sum / n) < 0.5, "noise mean %g", sum / n);
  p3d_camera_render_free (render);

  params.camera_index = 1;
  render = p3d_camera_render_new (&scene.camera, &params);
  p3d_camera_render_trace (render, scene.street);
  p3d_camera_render_rgb (render, scene.street, 7, other, WIDTH * 3);
  fail_unless (memcmp (noisy, other, n) != 0);
  p3d_camera_render_free (render);
  scene_clear (&scene);
}

GST_END_TEST;

/* The float64 oracle: the nearest of the ground and every box of the
 * street, each grown by @margin metres on every side, along pixel
 * (@u, @v)'s ray, by slab tests in float64, with no culling: its depth,
 * +inf for none; *@index gets the box (-1 ground, -2 none). */
static gdouble
oracle_depth (const P3dCamera * camera, const P3dStreet * street,
    gint u, gint v, gdouble margin, gint * index)
{
  gdouble dir[3], best = INFINITY, ground = -p3d_street_get_params
      (street)->sensor_height;
  const P3dStreetBox *boxes;
  guint n_boxes, i, axis;

  p3d_camera_ray (camera, u, v, dir);
  *index = -2;
  if (dir[2] < 0.0 && camera->position[2] > ground) {
    best = (ground - camera->position[2]) / dir[2];
    *index = -1;
  }
  boxes = p3d_street_get_boxes (street, &n_boxes);
  for (i = 0; i < n_boxes; i++) {
    const P3dStreetBox *box = &boxes[i];
    gdouble c = box->cos_yaw, s = box->sin_yaw;
    gdouble ox = camera->position[0] - box->x, oy = camera->position[1] -
        box->y;
    gdouble origin[3] = { c * ox + s * oy, c * oy - s * ox,
      camera->position[2] - box->z
    };
    gdouble local[3] = { c * dir[0] + s * dir[1], c * dir[1] - s * dir[0],
      dir[2]
    };
    gdouble near = -INFINITY, far = INFINITY;

    for (axis = 0; axis < 3; axis++) {
      gdouble half = box->half[axis] + margin, t1, t2;

      if (local[axis] == 0.0) {
        if (fabs (origin[axis]) > half)
          far = -INFINITY;
        continue;
      }
      t1 = (-half - origin[axis]) / local[axis];
      t2 = (half - origin[axis]) / local[axis];
      near = MAX (near, MIN (t1, t2));
      far = MIN (far, MAX (t1, t2));
    }
    if (near <= far && near > P3D_CAMERA_NEAR && near < best) {
      best = near;
      *index = (gint) i;
    }
  }
  return best;
}

/* Every pixel of crowded streets against the oracle: the depth within
 * 1e-4 relative and the class of the object hit, except at edges, where
 * the oracle's nearest changes when every box grows or shrinks by 1 mm
 * (there float32 may rightly see the other surface). */
GST_START_TEST (test_against_oracle)
{
  static guint8 labels[WIDTH * HEIGHT];
  static const guint64 seeds[] = { 1, 2, 3 };
  guint s;

  for (s = 0; s < G_N_ELEMENTS (seeds); s++) {
    P3dStreetParams params;
    P3dCameraRenderParams render_params;
    P3dCameraRender *render;
    P3dStreet *street;
    P3dCamera camera;
    guint checked = 0, objects = 0, edges = 0;
    gint u, v;

    p3d_street_params_init (&params);
    params.seed = seeds[s];
    params.cars = 64;
    params.pedestrians = 200;
    params.cyclists = 40;
    street = p3d_street_new (&params);
    p3d_street_set_frame (street, 3 * s, 10, 1);
    front_camera (&camera);
    memset (&render_params, 0, sizeof (render_params));
    render_params.width = WIDTH;
    render_params.height = HEIGHT;
    render_params.sun_elevation = 45.0;
    render = p3d_camera_render_new (&camera, &render_params);
    p3d_camera_render_trace (render, street);
    p3d_camera_render_labels (render, street, labels, WIDTH);

    for (v = 0; v < HEIGHT; v++)
      for (u = 0; u < WIDTH; u++) {
        gint index, grown, shrunk;
        gdouble expected = oracle_depth (&camera, street, u, v, 0.0, &index);
        gfloat got = p3d_camera_render_get_depth (render, u, v);

        oracle_depth (&camera, street, u, v, 1e-3, &grown);
        oracle_depth (&camera, street, u, v, -1e-3, &shrunk);
        if (grown != index || shrunk != index) {
          edges++;
          continue;
        }
        if (isinf (expected) || expected >= 1e7) {
          fail_unless (isinf (got), "(%d, %d): %g, oracle nothing", u, v, got);
          continue;
        }
        fail_unless (fabs (got - expected) <= 1e-4 * expected, "(%d, %d): "
            "depth %.6f, oracle %.6f", u, v, got, expected);
        if (index >= 0 && (guint) index < p3d_street_get_n_objects (street)) {
          fail_unless_equals_int (labels[v * WIDTH + u],
              p3d_street_get_object (street, index)->label);
          objects++;
        }
        checked++;
      }
    fail_unless (objects > 100, "seed %" G_GUINT64_FORMAT ": %u object "
        "pixels", seeds[s], objects);
    fail_unless (checked > 1000 && edges < checked / 20, "%u pixels "
        "checked, %u at edges", checked, edges);
    p3d_camera_render_free (render);
    p3d_street_free (street);
  }
}

GST_END_TEST;

/* Sizes, noise and sun out of range give no renderer. */
GST_START_TEST (test_bad_params)
{
  P3dCameraRenderParams params;
  P3dCamera camera;

  front_camera (&camera);
  memset (&params, 0, sizeof (params));
  params.width = WIDTH;
  params.height = HEIGHT;
  params.width = 0;
  fail_unless (p3d_camera_render_new (&camera, &params) == NULL);
  params.width = P3D_CAMERA_RENDER_MAX_SIDE + 1;
  fail_unless (p3d_camera_render_new (&camera, &params) == NULL);
  /* 16384 x 1025: each side in range, too many pixels */
  params.width = P3D_CAMERA_RENDER_MAX_SIDE;
  params.height = P3D_CAMERA_RENDER_MAX_PIXELS / P3D_CAMERA_RENDER_MAX_SIDE + 1;
  fail_unless (p3d_camera_render_new (&camera, &params) == NULL);
  params.width = WIDTH;
  params.height = HEIGHT;
  params.noise = -1.0;
  fail_unless (p3d_camera_render_new (&camera, &params) == NULL);
  params.noise = NAN;
  fail_unless (p3d_camera_render_new (&camera, &params) == NULL);
  params.noise = 0.0;
  params.sun_elevation = 91.0;
  fail_unless (p3d_camera_render_new (&camera, &params) == NULL);
  params.sun_elevation = 10.0;
  params.sun_azimuth = INFINITY;
  fail_unless (p3d_camera_render_new (&camera, &params) == NULL);
}

GST_END_TEST;

static Suite *
cameratestsrc_render_suite (void)
{
  Suite *s = suite_create ("cameratestsrc_render");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_box_in_front);
  tcase_add_test (tc, test_behind_and_around);
  tcase_add_test (tc, test_light_and_shadow);
  tcase_add_test (tc, test_noise);
  tcase_add_test (tc, test_against_oracle);
  tcase_add_test (tc, test_bad_params);
  return s;
}

P3D_CHECK_MAIN (cameratestsrc_render);
