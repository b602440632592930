/* The calibration files of bevpool, cameratestsrc and boxoverlay
 * (gst/p3dcalibration.h), alone: both forms of docs/calibration.md read
 * into the matrices written in them (a 3x3 padded with the identity, an
 * absent img_aug the identity, names given or generated, image sizes given
 * or 0 x 0), the page's worked example recomputed from what was read, and
 * malformed files (truncated at every byte, non-finite values, wrong
 * shapes, missing keys, bad image sizes), each with its error code and
 * message. */
#include <math.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "p3dcamera.h"
#include "p3dcalibration.h"
#include "p3dtest.h"

/* Camera "front" of docs/calibration.md (and examples/data/six-cameras.json),
 * then a second camera with a 3x3 intrinsics, no name and no img_aug. */
static const gchar cameras_form[] =
    "{\"cameras\": [\n"
    " {\"name\": \"front\",\n"
    "  \"intrinsics\": [[1266.0, 0, 800.0, 0], [0, 1266.0, 450.0, 0], "
    "[0, 0, 1.0, 0], [0, 0, 0, 1.0]],\n"
    "  \"camera_to_lidar\": [[0, 0, 1.0, 0.5], [-1.0, 0, 0, 0], "
    "[0, -1.0, 0, 1.6], [0, 0, 0, 1.0]],\n"
    "  \"img_aug\": [[0.48, 0, 0, -32.0], [0, 0.48, 0, -176.0], "
    "[0, 0, 1.0, 0], [0, 0, 0, 1.0]],\n"
    "  \"image_size\": [1600, 900.0]},\n"
    " {\"intrinsics\": [[500, 0, 320], [0, 400, 240], [0, 0, 1]],\n"
    "  \"camera_to_lidar\": [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], "
    "[13, 14, 15, 16]],\n"
    "  \"comment\": \"keys the reader does not know are ignored\"}\n" "]}\n";

/* Form 2 of the same two cameras, with a name for the first only and a
 * batch-free [cameras][4][4] per tensor. */
static const gchar tensor_form[] =
    "{\"camera_order\": [\"front\"],\n"
    " \"lidar2image\": \"ignored\",\n"
    " \"camera_intrinsics\": [[[1266.0, 0, 800.0, 0], [0, 1266.0, 450.0, 0], "
    "[0, 0, 1.0, 0], [0, 0, 0, 1.0]], [[500, 0, 320], [0, 400, 240], "
    "[0, 0, 1]]],\n"
    " \"camera2lidar\": [[[0, 0, 1.0, 0.5], [-1.0, 0, 0, 0], "
    "[0, -1.0, 0, 1.6], [0, 0, 0, 1.0]], [[1, 2, 3, 4], [5, 6, 7, 8], "
    "[9, 10, 11, 12], [13, 14, 15, 16]]],\n"
    " \"img_aug_matrix\": [[[0.48, 0, 0, -32.0], [0, 0.48, 0, -176.0], "
    "[0, 0, 1.0, 0], [0, 0, 0, 1.0]], [[1, 0, 0, 0], [0, 1, 0, 0], "
    "[0, 0, 1, 0], [0, 0, 0, 1]]]}\n";

/* The matrices as written above, row-major. */
static const gdouble front_intrinsics[16] = {
  1266, 0, 800, 0, 0, 1266, 450, 0, 0, 0, 1, 0, 0, 0, 0, 1
};

static const gdouble front_to_lidar[16] = {
  0, 0, 1, 0.5, -1, 0, 0, 0, 0, -1, 0, 1.6, 0, 0, 0, 1
};

static const gdouble front_img_aug[16] = {
  0.48, 0, 0, -32, 0, 0.48, 0, -176, 0, 0, 1, 0, 0, 0, 0, 1
};

/* the 3x3 in the top-left, the rest of the identity around it */
static const gdouble second_intrinsics[16] = {
  500, 0, 320, 0, 0, 400, 240, 0, 0, 0, 1, 0, 0, 0, 0, 1
};

static const gdouble second_to_lidar[16] = {
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
};

static const gdouble identity[16] = {
  1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1
};

static void
assert_matrix (const gdouble * got, const gdouble * expected,
    const gchar * what)
{
  guint i;

  for (i = 0; i < 16; i++)
    fail_unless (got[i] == expected[i], "%s[%u][%u] is %g, expected %g",
        what, i / 4, i % 4, got[i], expected[i]);
}

static void
assert_two_cameras (P3dCalibration * calibration)
{
  fail_unless (calibration != NULL);
  fail_unless_equals_int (calibration->n_cameras, 2);
  fail_unless_equals_int (g_strv_length (calibration->names), 2);
  fail_unless_equals_string (calibration->names[0], "front");
  fail_unless_equals_string (calibration->names[1], "camera1");
  assert_matrix (calibration->cameras[0].intrinsics, front_intrinsics,
      "front intrinsics");
  assert_matrix (calibration->cameras[0].camera_to_lidar, front_to_lidar,
      "front camera_to_lidar");
  assert_matrix (calibration->cameras[0].img_aug, front_img_aug,
      "front img_aug");
  assert_matrix (calibration->cameras[1].intrinsics, second_intrinsics,
      "second intrinsics");
  assert_matrix (calibration->cameras[1].camera_to_lidar, second_to_lidar,
      "second camera_to_lidar");
  assert_matrix (calibration->cameras[1].img_aug, identity, "second img_aug");
  /* the second camera's size is not given (and form 2 gives none) */
  fail_unless_equals_int (calibration->image_sizes[1].width, 0);
  fail_unless_equals_int (calibration->image_sizes[1].height, 0);
}

GST_START_TEST (test_cameras_form)
{
  GError *error = NULL;
  P3dCalibration *calibration = p3d_calibration_parse (cameras_form,
      -1, "test", &error);

  fail_unless (error == NULL, "%s", error ? error->message : "");
  assert_two_cameras (calibration);
  fail_unless_equals_int (calibration->image_sizes[0].width, 1600);
  fail_unless_equals_int (calibration->image_sizes[0].height, 900);
  p3d_calibration_free (calibration);
}

GST_END_TEST;

GST_START_TEST (test_tensor_form)
{
  GError *error = NULL;
  P3dCalibration *calibration = p3d_calibration_parse (tensor_form,
      -1, "test", &error);

  fail_unless (error == NULL, "%s", error ? error->message : "");
  assert_two_cameras (calibration);
  fail_unless_equals_int (calibration->image_sizes[0].width, 0);
  fail_unless_equals_int (calibration->image_sizes[0].height, 0);
  p3d_calibration_free (calibration);
}

GST_END_TEST;

/* x = M^-1 b for the top-left 3x3 of a row-major 4x4, by Cramer's rule. */
static void
solve3 (const gdouble * m, const gdouble * b, gdouble * x)
{
#define M(r, c) m[(r) * 4 + (c)]
  gdouble det = M (0, 0) * (M (1, 1) * M (2, 2) - M (1, 2) * M (2, 1))
      - M (0, 1) * (M (1, 0) * M (2, 2) - M (1, 2) * M (2, 0))
      + M (0, 2) * (M (1, 0) * M (2, 1) - M (1, 1) * M (2, 0));
  guint c;

  for (c = 0; c < 3; c++) {
    gdouble a[16];
    guint r;

    memcpy (a, m, sizeof (a));
    for (r = 0; r < 3; r++)
      a[r * 4 + c] = b[r];
    x[c] = (a[0] * (a[5] * a[10] - a[6] * a[9])
        - a[1] * (a[4] * a[10] - a[6] * a[8])
        + a[2] * (a[4] * a[9] - a[5] * a[8])) / det;
  }
#undef M
}

GST_START_TEST (test_worked_example)
{
  /* docs/calibration.md, "A worked example": feature pixel (44, 16) of an
   * 88 x 32 map on a 704 x 256 input, depth bin 19 of <1,60,0.5>, through
   * the matrices read for camera "front"; the page's table gives each
   * step to the digits below. */
  GError *error = NULL;
  P3dCalibration *calibration = p3d_calibration_parse (cameras_form,
      -1, "test", &error);
  const P3dcCameraCalib *front = &calibration->cameras[0];
  gdouble frustum[3], q[3], r[3], s[3], p_camera[3], p_lidar[3];
  guint i;

  fail_unless (calibration != NULL);
  frustum[0] = 44.0 * 703.0 / 87.0;
  frustum[1] = 16.0 * 255.0 / 31.0;
  frustum[2] = 1.0 + 19 * 0.5;
  fail_unless (fabs (frustum[0] - 355.5402) < 1e-4);
  fail_unless (fabs (frustum[1] - 131.6129) < 1e-4);

  /* undo the augmentation: r = A^-1 (frustum - a) */
  for (i = 0; i < 3; i++)
    q[i] = frustum[i] - front->img_aug[i * 4 + 3];
  solve3 (front->img_aug, q, r);
  fail_unless (fabs (r[0] - 807.3755) < 1e-4, "%f", r[0]);
  fail_unless (fabs (r[1] - 640.8602) < 1e-4, "%f", r[1]);
  fail_unless (fabs (r[2] - 10.5) < 1e-12);

  /* back to a ray point, then undo the intrinsics */
  s[0] = r[0] * r[2];
  s[1] = r[1] * r[2];
  s[2] = r[2];
  solve3 (front->intrinsics, s, p_camera);
  fail_unless (fabs (p_camera[0] - 0.061171) < 1e-6, "%f", p_camera[0]);
  fail_unless (fabs (p_camera[1] - 1.582964) < 1e-6, "%f", p_camera[1]);
  fail_unless (fabs (p_camera[2] - 10.5) < 1e-12);

  /* camera to lidar: R p + t */
  for (i = 0; i < 3; i++)
    p_lidar[i] = front->camera_to_lidar[i * 4 + 0] * p_camera[0]
        + front->camera_to_lidar[i * 4 + 1] * p_camera[1]
        + front->camera_to_lidar[i * 4 + 2] * p_camera[2]
        + front->camera_to_lidar[i * 4 + 3];
  fail_unless (fabs (p_lidar[0] - 11.0) < 1e-9, "%f", p_lidar[0]);
  fail_unless (fabs (p_lidar[1] + 0.061171) < 1e-6, "%f", p_lidar[1]);
  fail_unless (fabs (p_lidar[2] - 0.017036) < 1e-6, "%f", p_lidar[2]);

  /* the cell (x 216, y 179) of the page's xbound / ybound <-54,54,0.3> */
  fail_unless_equals_int ((gint) ((p_lidar[0] + 54.0) / 0.3), 216);
  fail_unless_equals_int ((gint) ((p_lidar[1] + 54.0) / 0.3), 179);
  p3d_calibration_free (calibration);
}

GST_END_TEST;

GST_START_TEST (test_load_file)
{
  GError *error = NULL;
  gchar *path = NULL;
  gint fd = g_file_open_tmp ("bevcalibration-XXXXXX.json", &path, &error);
  P3dCalibration *calibration;
  gchar *missing;

  fail_unless (fd >= 0, "%s", error ? error->message : "");
  fail_unless (write (fd, tensor_form, strlen (tensor_form))
      == (gssize) strlen (tensor_form));
  close (fd);
  calibration = p3d_calibration_load (path, &error);
  fail_unless (error == NULL, "%s", error ? error->message : "");
  assert_two_cameras (calibration);
  p3d_calibration_free (calibration);

  /* errors name the file */
  fail_unless (g_file_set_contents (path, "{\"cameras\": 1}", -1, NULL));
  fail_if (p3d_calibration_load (path, &error));
  fail_unless (g_error_matches (error, P3D_CALIBRATION_ERROR,
          P3D_CALIBRATION_ERROR_SCHEMA));
  fail_unless (g_str_has_prefix (error->message, path));
  fail_unless (g_str_has_suffix (error->message,
          ": \"cameras\" is not an array"), "%s", error->message);
  g_clear_error (&error);

  g_unlink (path);
  fail_if (p3d_calibration_load (path, &error));
  fail_unless (g_error_matches (error, P3D_CALIBRATION_ERROR,
          P3D_CALIBRATION_ERROR_NOT_FOUND));
  missing = g_strdup_printf ("cannot read %s: ", path);
  fail_unless (g_str_has_prefix (error->message, missing), "%s",
      error->message);
  g_clear_error (&error);
  g_free (missing);

  /* there, but not a file that can be read */
  fail_if (p3d_calibration_load (g_get_tmp_dir (), &error));
  fail_unless (g_error_matches (error, P3D_CALIBRATION_ERROR,
          P3D_CALIBRATION_ERROR_READ), "%s", error->message);
  g_clear_error (&error);
  g_free (path);
}

GST_END_TEST;

/* Brackets: @depth opening ones, then as many closing ones. */
static gchar *
nested (const gchar * open, const gchar * close, guint depth)
{
  GString *text = g_string_new (NULL);
  guint i;

  for (i = 0; i < depth; i++)
    g_string_append (text, open);
  for (i = 0; i < depth; i++)
    g_string_append (text, close);
  return g_string_free (text, FALSE);
}

/* A calibration whose unknown key holds @depth - 1 more levels: the
 * document is @depth deep. */
static gchar *
calibration_of_depth (guint depth)
{
  gchar *deep = nested ("[", "]", depth - 1);
  gchar *text = g_strdup_printf ("{\"x\": %s, %s", deep, cameras_form + 1);

  g_free (deep);
  return text;
}

/* json-glib recurses once per level: 100 000 levels overflowed the stack
 * (issue 32.1). A scan of the bytes refuses more than 64 first, naming the
 * file; brackets inside strings do not count. */
GST_START_TEST (test_deep_json)
{
  gchar *deep = nested ("[", "]", 100000);
  gchar *objects = nested ("{\"a\":", "}", 100000);
  gchar *at_limit = calibration_of_depth (64);
  gchar *over = calibration_of_depth (65);
  gchar *strings = g_strdup_printf ("{\"x\": \"%s\", %s", deep,
      cameras_form + 1);
  const gchar *refused[3] = { deep, objects, over };
  P3dCalibration *calibration;
  GError *error = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (refused); i++) {
    fail_if (p3d_calibration_parse (refused[i], -1, "deep.json", &error));
    fail_unless (g_error_matches (error, P3D_CALIBRATION_ERROR,
            P3D_CALIBRATION_ERROR_SYNTAX));
    fail_unless (g_str_has_prefix (error->message, "deep.json: not valid "
            "JSON: nested more than 64 levels deep"), "%s", error->message);
    g_clear_error (&error);
  }
  calibration = p3d_calibration_parse (at_limit, -1, "f", &error);
  fail_unless (calibration != NULL, "%s", error ? error->message : "");
  assert_two_cameras (calibration);
  p3d_calibration_free (calibration);
  calibration = p3d_calibration_parse (strings, -1, "f", &error);
  fail_unless (calibration != NULL, "%s", error ? error->message : "");
  p3d_calibration_free (calibration);
  g_free (deep);
  g_free (objects);
  g_free (at_limit);
  g_free (over);
  g_free (strings);
}

GST_END_TEST;

/* A calibration is kilobytes: a file over 1 MiB, a device (/dev/zero was
 * read for ever, issue 32.3) or a FIFO (opening it would wait for a
 * writer) is refused before it is read, naming the file. */
GST_START_TEST (test_file_limits)
{
  gchar *dir = g_dir_make_tmp ("p3d-calibration-XXXXXX", NULL);
  gchar *big = g_build_filename (dir, "big.json", NULL);
  gchar *fits = g_build_filename (dir, "fits.json", NULL);
  gchar *fifo = g_build_filename (dir, "fifo.json", NULL);
  gchar *padded;
  gsize room = P3D_CALIBRATION_MAX_FILE_SIZE - strlen (cameras_form);
  P3dCalibration *calibration;
  GError *error = NULL;

  /* the same document padded with spaces: to the limit, and a byte over */
  padded = g_strnfill (P3D_CALIBRATION_MAX_FILE_SIZE + 1, ' ');
  memcpy (padded, cameras_form, strlen (cameras_form));
  fail_unless (g_file_set_contents (fits, padded, strlen (cameras_form) +
          room, NULL));
  fail_unless (g_file_set_contents (big, padded, -1, NULL));
  calibration = p3d_calibration_load (fits, &error);
  fail_unless (calibration != NULL, "%s", error ? error->message : "");
  assert_two_cameras (calibration);
  p3d_calibration_free (calibration);
  fail_if (p3d_calibration_load (big, &error));
  fail_unless (g_error_matches (error, P3D_CALIBRATION_ERROR,
          P3D_CALIBRATION_ERROR_SCHEMA));
  fail_unless (g_str_has_prefix (error->message, big)
      && strstr (error->message, "1048577 bytes, more than the 1048576 a "
          "calibration file may hold"), "%s", error->message);
  g_clear_error (&error);

  fail_if (p3d_calibration_load ("/dev/zero", &error));
  fail_unless (g_error_matches (error, P3D_CALIBRATION_ERROR,
          P3D_CALIBRATION_ERROR_READ));
  fail_unless_equals_string (error->message, "cannot read /dev/zero: not a "
      "regular file (a calibration is a JSON file)");
  g_clear_error (&error);

  fail_unless (mkfifo (fifo, 0600) == 0);
  fail_if (p3d_calibration_load (fifo, &error));
  fail_unless (g_error_matches (error, P3D_CALIBRATION_ERROR,
          P3D_CALIBRATION_ERROR_READ));
  fail_unless (strstr (error->message, "not a regular file") != NULL, "%s",
      error->message);
  g_clear_error (&error);

  g_unlink (big);
  g_unlink (fits);
  g_unlink (fifo);
  g_rmdir (dir);
  g_free (padded);
  g_free (big);
  g_free (fits);
  g_free (fifo);
  g_free (dir);
}

GST_END_TEST;

#define ROW4 "[1, 0, 0, 0]"
#define M4 "[" ROW4 ", " ROW4 ", " ROW4 ", " ROW4 "]"
#define CAMERA(intrinsics, to_lidar) \
    "{\"cameras\": [{\"intrinsics\": " intrinsics ", \"camera_to_lidar\": " \
    to_lidar "}]}"
#define SIZED(size) \
    "{\"cameras\": [{\"intrinsics\": " M4 ", \"camera_to_lidar\": " M4 \
    ", \"image_size\": " size "}]}"

GST_START_TEST (test_malformed)
{
  /* docs/calibration.md, "Errors": each malformed document, its code and
   * the message (after the origin "f" and ": "). */
  static const struct
  {
    const gchar *document;
    P3dCalibrationError code;
    const gchar *message;
  } cases[] = {
    {"[1, 2]", P3D_CALIBRATION_ERROR_SCHEMA,
        "f: the document is not a JSON object"},
    {"{\"intrinsics\": 1}", P3D_CALIBRATION_ERROR_SCHEMA,
        "f: neither \"cameras\" nor \"camera_intrinsics\" is present (see "
          "docs/calibration.md)"},
    {"{\"cameras\": {}}", P3D_CALIBRATION_ERROR_SCHEMA,
        "f: \"cameras\" is not an array"},
    {"{\"cameras\": []}", P3D_CALIBRATION_ERROR_SCHEMA,
        "f: \"cameras\" is empty"},
    {"{\"cameras\": [1]}", P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0] is not an object"},
    /* it once left a NULL among the names and leaked the others (32.8) */
    {"{\"cameras\": [{\"name\": \"a\", \"intrinsics\": " M4 ", "
          "\"camera_to_lidar\": " M4 "}, {\"name\": 7, \"intrinsics\": " M4
          ", \"camera_to_lidar\": " M4 "}, {\"name\": \"c\", "
          "\"intrinsics\": " M4 ", \"camera_to_lidar\": " M4 "}]}",
          P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[1].name is not a string"},
    {"{\"cameras\": [{\"name\": [\"x\"], \"intrinsics\": " M4 ", "
          "\"camera_to_lidar\": " M4 "}]}", P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].name is not a string"},
    {"{\"cameras\": [{\"camera_to_lidar\": " M4 "}]}",
          P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].intrinsics is not an array of rows"},
    {"{\"cameras\": [{\"intrinsics\": " M4 "}]}",
          P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].camera_to_lidar is not an array of rows"},
    /* wrong sizes */
    {CAMERA ("[" ROW4 ", " ROW4 "]", M4), P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].intrinsics has 2 rows, expected 4 or 3"},
    {CAMERA (M4, "[[1, 0, 0], [0, 1, 0], [0, 0, 1]]"),
          P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].camera_to_lidar has 3 rows, expected 4"},
    {CAMERA (M4, "[" ROW4 ", " ROW4 ", [1, 0, 0], " ROW4 "]"),
          P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].camera_to_lidar row 2 is not an array of 4 numbers"},
    {CAMERA ("[[1, 0, 0, 0], [0, 1, 0], [0, 0, 1]]", M4),
          P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].intrinsics row 0 is not an array of 3 numbers"},
    {"{\"cameras\": [{\"intrinsics\": " M4 ", \"camera_to_lidar\": " M4
          ", \"img_aug\": [" ROW4 "]}]}", P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].img_aug has 1 rows, expected 4"},
    /* values that are no finite number */
    {CAMERA (M4, "[" ROW4 ", [1, 0, 0, \"1\"], " ROW4 ", " ROW4 "]"),
          P3D_CALIBRATION_ERROR_VALUE,
        "f: cameras[0].camera_to_lidar[1][3] is not a number"},
    {CAMERA (M4, "[" ROW4 ", " ROW4 ", [1, null, 0, 0], " ROW4 "]"),
          P3D_CALIBRATION_ERROR_VALUE,
        "f: cameras[0].camera_to_lidar[2][1] is not a number"},
    {CAMERA ("[[1e999, 0, 0], [0, 1, 0], [0, 0, 1]]", M4),
          P3D_CALIBRATION_ERROR_VALUE,
        "f: cameras[0].intrinsics[0][0] is not finite"},
    {CAMERA (M4, "[" ROW4 ", " ROW4 ", " ROW4 ", [0, 0, -1e400, 1]]"),
          P3D_CALIBRATION_ERROR_VALUE,
        "f: cameras[0].camera_to_lidar[3][2] is not finite"},
    /* form 2: the batch dimension CUDA-BEVFusion's tensors have, and
     * arrays of other lengths than camera_intrinsics */
    {"{\"camera_intrinsics\": [[" M4 ", " M4 ", " M4 ", " M4 ", " M4 ", "
          M4 "]], \"camera2lidar\": [" M4 "], \"img_aug_matrix\": [" M4
          "]}", P3D_CALIBRATION_ERROR_SCHEMA,
        "f: camera_intrinsics[0] has 6 rows, expected 4 or 3"},
    {"{\"camera_intrinsics\": [" M4 ", " M4 "], \"camera2lidar\": [" M4
          ", " M4 "], \"img_aug_matrix\": [" M4 "]}",
          P3D_CALIBRATION_ERROR_SCHEMA,
        "f: \"img_aug_matrix\" must be an array of 2 matrices, one per camera"},
    {"{\"camera_intrinsics\": [" M4 "], \"img_aug_matrix\": [" M4 "]}",
          P3D_CALIBRATION_ERROR_SCHEMA,
        "f: \"camera2lidar\" must be an array of 1 matrices, one per camera"},
    {"{\"camera_intrinsics\": []}", P3D_CALIBRATION_ERROR_SCHEMA,
        "f: \"camera_intrinsics\" must be a non-empty array of 4x4 "
          "matrices"},
    {"{\"camera_intrinsics\": " M4 "}", P3D_CALIBRATION_ERROR_SCHEMA,
        "f: camera_intrinsics[0] row 0 is not an array of 4 numbers"},
    /* image sizes: two whole numbers of pixels, 1 to 16384 */
    {SIZED ("1600"), P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].image_size is not an array [width, height]"},
    {SIZED ("[1600]"), P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].image_size is not an array [width, height]"},
    {SIZED ("[1600, 900, 3]"), P3D_CALIBRATION_ERROR_SCHEMA,
        "f: cameras[0].image_size is not an array [width, height]"},
    {SIZED ("[\"1600\", 900]"), P3D_CALIBRATION_ERROR_VALUE,
        "f: cameras[0].image_size: the width is not a number"},
    {SIZED ("[1600, 0]"), P3D_CALIBRATION_ERROR_VALUE,
        "f: cameras[0].image_size: the height 0 is not a whole number of "
          "pixels from 1 to 16384"},
    {SIZED ("[-704, 256]"), P3D_CALIBRATION_ERROR_VALUE,
        "f: cameras[0].image_size: the width -704 is not a whole number of "
          "pixels from 1 to 16384"},
    {SIZED ("[704.5, 256]"), P3D_CALIBRATION_ERROR_VALUE,
        "f: cameras[0].image_size: the width 704.5 is not a whole number of "
          "pixels from 1 to 16384"},
    {SIZED ("[16385, 256]"), P3D_CALIBRATION_ERROR_VALUE,
        "f: cameras[0].image_size: the width 16385 is not a whole number of "
          "pixels from 1 to 16384"},
    {SIZED ("[704, 1e999]"), P3D_CALIBRATION_ERROR_VALUE,
        "f: cameras[0].image_size: the height inf is not a whole number of "
          "pixels from 1 to 16384"},
  };
  GError *error = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    P3dCalibration *calibration =
        p3d_calibration_parse (cases[i].document, -1, "f", &error);

    fail_unless (calibration == NULL, "%s was read", cases[i].document);
    fail_unless (error != NULL);
    fail_unless (g_error_matches (error, P3D_CALIBRATION_ERROR,
            cases[i].code), "%s: code %d, expected %d", cases[i].document,
        error->code, cases[i].code);
    fail_unless_equals_string (error->message, cases[i].message);
    g_clear_error (&error);
  }

  /* not JSON: json-glib's words follow ours */
  fail_if (p3d_calibration_parse ("{\"cameras\": [", -1, "f", &error));
  fail_unless (g_error_matches (error, P3D_CALIBRATION_ERROR,
          P3D_CALIBRATION_ERROR_SYNTAX));
  fail_unless (g_str_has_prefix (error->message, "f: not valid JSON: "), "%s",
      error->message);
  g_clear_error (&error);
}

GST_END_TEST;

GST_START_TEST (test_truncated)
{
  /* Every prefix of a valid file is refused with an error, never read as
   * fewer cameras or matrices (each byte cut, as a file cut short). */
  const gchar *documents[] = { cameras_form, tensor_form };
  guint d;

  for (d = 0; d < G_N_ELEMENTS (documents); d++) {
    gsize length = strlen (documents[d]), cut;

    /* the last bytes are the closing brace and a newline */
    for (cut = 0; cut < length - 1; cut++) {
      GError *error = NULL;
      gchar *prefix = g_strndup (documents[d], cut);
      P3dCalibration *calibration =
          p3d_calibration_parse (prefix, cut, "f", &error);

      fail_unless (calibration == NULL, "%" G_GSIZE_FORMAT " bytes read", cut);
      fail_unless (error != NULL && error->domain == P3D_CALIBRATION_ERROR
          && g_str_has_prefix (error->message, "f: "));
      g_clear_error (&error);
      g_free (prefix);
    }
  }
}

GST_END_TEST;

/* The pinhole camera of an entry (p3dcamera.h), worked out by hand: a
 * level camera 0.4 m ahead of the lidar and 0.3 m below it, looking along
 * +x, fx = fy = 80, principal point (80, 16). A lidar point (x, y, z) is
 * at camera (-y, -(z + 0.3), x - 0.4). */
static void
front_calib (P3dcCameraCalib * calib)
{
  static const gdouble intrinsics[16] = {
    80, 0, 80, 0, 0, 80, 16, 0, 0, 0, 1, 0, 0, 0, 0, 1
  };
  static const gdouble to_lidar[16] = {
    0, 0, 1, 0.4, -1, 0, 0, 0, 0, -1, 0, -0.3, 0, 0, 0, 1
  };

  memcpy (calib->intrinsics, intrinsics, sizeof (intrinsics));
  memcpy (calib->camera_to_lidar, to_lidar, sizeof (to_lidar));
  memcpy (calib->img_aug, identity, sizeof (identity));
}

GST_START_TEST (test_camera_projection)
{
  P3dCalibrationImageSize size = { 160, 64 };
  gdouble point[3] = { 10.4, 1.0, -1.73 }, camera_point[3], u, v, dir[3];
  gdouble behind[3] = { -5.0, 2.0, -0.3 }, ahead[3] = { 10.4, 2.0, -0.3 };
  P3dCameraSegment segments[P3D_CAMERA_BOX_EDGES], segment;
  gdouble centre[3] = { 0.4, 0.0, -0.3 }, half[3] = { 3.0, 1.0, 0.5 };
  gdouble corners[8][3];
  P3dcCameraCalib calib;
  P3dCamera camera;
  gchar *why = NULL;

  front_calib (&calib);
  fail_unless (p3d_camera_init (&camera, &calib, &size, &why), "%s", why);
  fail_unless_equals_int (camera.width, 160);
  fail_unless_equals_int (camera.height, 64);

  /* (10.4, 1, -1.73): camera (-1, 1.43, 10), pixel (72, 27.44) */
  p3d_camera_from_lidar (&camera, point, camera_point);
  fail_unless (fabs (camera_point[0] + 1.0) < 1e-12);
  fail_unless (fabs (camera_point[1] - 1.43) < 1e-12);
  fail_unless (fabs (camera_point[2] - 10.0) < 1e-12);
  fail_unless (p3d_camera_project (&camera, camera_point, &u, &v));
  fail_unless (fabs (u - 72.0) < 1e-9 && fabs (v - 27.44) < 1e-9,
      "(%f, %f)", u, v);
  /* the ray back through that pixel, 1 per metre of depth, reaches it */
  p3d_camera_ray (&camera, u, v, dir);
  fail_unless (fabs (camera.position[0] + 10.0 * dir[0] - point[0]) < 1e-9);
  fail_unless (fabs (camera.position[1] + 10.0 * dir[1] - point[1]) < 1e-9);
  fail_unless (fabs (camera.position[2] + 10.0 * dir[2] - point[2]) < 1e-9);
  /* behind the camera, or nearer than the near plane: no pixel */
  camera_point[2] = -3.0;
  fail_if (p3d_camera_project (&camera, camera_point, &u, &v));
  camera_point[2] = 0.04;
  fail_if (p3d_camera_project (&camera, camera_point, &u, &v));

  /* from 5 m behind to 10 m ahead, 2 m to the left at the camera's
   * height: clipped at z = 0.05 (camera x -2), so from u = 80 - 80 * 2 /
   * 0.05 = -3120 to u = 80 - 80 * 2 / 10 = 64, on the horizon */
  fail_unless (p3d_camera_project_segment (&camera, behind, ahead, &segment));
  fail_unless (fabs (segment.u0 + 3120.0) < 1e-6, "%f", segment.u0);
  fail_unless (fabs (segment.u1 - 64.0) < 1e-9, "%f", segment.u1);
  fail_unless (fabs (segment.v0 - 16.0) < 1e-9 && fabs (segment.v1 - 16.0)
      < 1e-9);
  /* all behind: nothing */
  ahead[0] = -1.0;
  fail_if (p3d_camera_project_segment (&camera, behind, ahead, &segment));

  /* a box around the camera: its 4 edges along x cross the near plane,
   * its front face's 4 edges lie ahead (x = 3.4, depth 3), the back face's
   * behind */
  p3d_camera_box_corners (centre, 1.0, 0.0, half, corners);
  fail_unless (corners[0][0] == 3.4 && corners[0][1] == 1.0
      && corners[0][2] == -0.8, "front left bottom (%g, %g, %g)",
      corners[0][0], corners[0][1], corners[0][2]);
  fail_unless (corners[6][0] == -2.6 && corners[6][1] == -1.0
      && corners[6][2] == 0.2);
  fail_unless_equals_int (p3d_camera_project_box (&camera, corners, segments),
      8);
}

GST_END_TEST;

GST_START_TEST (test_camera_refused)
{
  static const struct
  {
    guint element;
    gdouble value;
    const gchar *why;
  } intrinsics[] = {
    {8, 0.01, "third row is [0.01, 0, 1]"},
    {9, -1.0, "third row is [0, -1, 1]"},
    {10, 2.0, "third row is [0, 0, 2]"},
    {4, 3.0, "intrinsics [1][0] is 3"},
    {0, 0.0, "[0][0] = 0"},
    {5, -80.0, "[1][1] = -80"},
  };
  P3dcCameraCalib calib;
  P3dCamera camera;
  gchar *why = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (intrinsics); i++) {
    front_calib (&calib);
    calib.intrinsics[intrinsics[i].element] = intrinsics[i].value;
    fail_if (p3d_camera_init (&camera, &calib, NULL, &why));
    fail_unless (strstr (why, intrinsics[i].why) != NULL, "%s", why);
    g_clear_pointer (&why, g_free);
  }
  /* a skew is a pinhole camera's */
  front_calib (&calib);
  calib.intrinsics[1] = 0.5;
  fail_unless (p3d_camera_init (&camera, &calib, NULL, &why));
  fail_unless_equals_int (camera.width, 0);

  /* camera_to_lidar: float32 rounding passes; a scale, a shear, a mirror
   * do not */
  front_calib (&calib);
  calib.camera_to_lidar[2] = 1.0004;
  fail_unless (p3d_camera_init (&camera, &calib, NULL, &why));
  calib.camera_to_lidar[2] = 1.1;
  fail_if (p3d_camera_init (&camera, &calib, NULL, &why));
  fail_unless (strstr (why, "not a rotation") != NULL, "%s", why);
  g_clear_pointer (&why, g_free);
  front_calib (&calib);
  calib.camera_to_lidar[1] = 0.2;
  fail_if (p3d_camera_init (&camera, &calib, NULL, &why));
  g_clear_pointer (&why, g_free);
  front_calib (&calib);
  calib.camera_to_lidar[2] = -1.0;
  fail_if (p3d_camera_init (&camera, &calib, NULL, &why));
  fail_unless (strstr (why, "det R is -1") != NULL, "%s", why);
  g_clear_pointer (&why, g_free);
}

GST_END_TEST;

static Suite *
calibration_suite (void)
{
  Suite *s = suite_create ("calibration");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_cameras_form);
  tcase_add_test (tc, test_tensor_form);
  tcase_add_test (tc, test_worked_example);
  tcase_add_test (tc, test_load_file);
  tcase_add_test (tc, test_malformed);
  tcase_add_test (tc, test_truncated);
  tcase_add_test (tc, test_deep_json);
  tcase_add_test (tc, test_file_limits);
  tcase_add_test (tc, test_camera_projection);
  tcase_add_test (tc, test_camera_refused);
  return s;
}

P3D_CHECK_MAIN (calibration);
