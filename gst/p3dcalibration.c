/* Camera calibration files; see p3dcalibration.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "p3dcalibration.h"
#include "p3djson.h"

G_DEFINE_QUARK (p3d - calibration - error - quark, p3d_calibration_error);

static void
set_identity (gdouble * m)
{
  guint i;

  memset (m, 0, 16 * sizeof (gdouble));
  for (i = 0; i < 4; i++)
    m[i * 5] = 1.0;
}

/* Reads a 4x4 (or, when @allow_3x3, 3x3 padded with the identity) matrix
 * of numbers; @where names it in errors. */
static gboolean
read_matrix (JsonNode * node, gboolean allow_3x3, const gchar * where,
    gdouble * m, GError ** error)
{
  JsonArray *rows;
  guint n, r, c;

  if (node == NULL || !JSON_NODE_HOLDS_ARRAY (node)) {
    g_set_error (error, P3D_CALIBRATION_ERROR,
        P3D_CALIBRATION_ERROR_SCHEMA, "%s is not an array of rows", where);
    return FALSE;
  }
  rows = json_node_get_array (node);
  n = json_array_get_length (rows);
  if (n != 4 && !(allow_3x3 && n == 3)) {
    g_set_error (error, P3D_CALIBRATION_ERROR,
        P3D_CALIBRATION_ERROR_SCHEMA, "%s has %u rows, expected 4%s",
        where, n, allow_3x3 ? " or 3" : "");
    return FALSE;
  }
  set_identity (m);
  for (r = 0; r < n; r++) {
    JsonNode *row_node = json_array_get_element (rows, r);
    JsonArray *row;

    if (!JSON_NODE_HOLDS_ARRAY (row_node)
        || json_array_get_length (row = json_node_get_array (row_node)) != n) {
      g_set_error (error, P3D_CALIBRATION_ERROR,
          P3D_CALIBRATION_ERROR_SCHEMA, "%s row %u is not an array of "
          "%u numbers", where, r, n);
      return FALSE;
    }
    for (c = 0; c < n; c++) {
      JsonNode *value = json_array_get_element (row, c);
      gdouble v;

      if (!JSON_NODE_HOLDS_VALUE (value)
          || (json_node_get_value_type (value) != G_TYPE_DOUBLE
              && json_node_get_value_type (value) != G_TYPE_INT64)) {
        g_set_error (error, P3D_CALIBRATION_ERROR,
            P3D_CALIBRATION_ERROR_VALUE, "%s[%u][%u] is not a number",
            where, r, c);
        return FALSE;
      }
      v = json_node_get_double (value);
      if (!isfinite (v)) {
        g_set_error (error, P3D_CALIBRATION_ERROR,
            P3D_CALIBRATION_ERROR_VALUE, "%s[%u][%u] is not finite",
            where, r, c);
        return FALSE;
      }
      m[r * 4 + c] = v;
    }
  }
  return TRUE;
}

static P3dCalibration *
calibration_new (guint n_cameras)
{
  P3dCalibration *calibration = g_new0 (P3dCalibration, 1);

  calibration->n_cameras = n_cameras;
  calibration->names = g_new0 (gchar *, n_cameras + 1);
  calibration->cameras = g_new0 (P3dcCameraCalib, n_cameras);
  calibration->image_sizes = g_new0 (P3dCalibrationImageSize, n_cameras);
  return calibration;
}

/* Reads [width, height], two whole numbers in 1 ..
 * P3D_CALIBRATION_MAX_IMAGE_SIDE; @where names it in errors. */
static gboolean
read_image_size (JsonNode * node, const gchar * where,
    P3dCalibrationImageSize * size, GError ** error)
{
  static const gchar *names[2] = { "width", "height" };
  guint sides[2], i;
  JsonArray *array;

  if (node == NULL || !JSON_NODE_HOLDS_ARRAY (node)
      || json_array_get_length (array = json_node_get_array (node)) != 2) {
    g_set_error (error, P3D_CALIBRATION_ERROR, P3D_CALIBRATION_ERROR_SCHEMA,
        "%s is not an array [width, height]", where);
    return FALSE;
  }
  for (i = 0; i < 2; i++) {
    JsonNode *value = json_array_get_element (array, i);
    gdouble v;

    if (!JSON_NODE_HOLDS_VALUE (value)
        || (json_node_get_value_type (value) != G_TYPE_DOUBLE
            && json_node_get_value_type (value) != G_TYPE_INT64)) {
      g_set_error (error, P3D_CALIBRATION_ERROR, P3D_CALIBRATION_ERROR_VALUE,
          "%s: the %s is not a number", where, names[i]);
      return FALSE;
    }
    v = json_node_get_double (value);
    if (!(v >= 1.0 && v <= P3D_CALIBRATION_MAX_IMAGE_SIDE && v == floor (v))) {
      g_set_error (error, P3D_CALIBRATION_ERROR, P3D_CALIBRATION_ERROR_VALUE,
          "%s: the %s %g is not a whole number of pixels from 1 to %d", where,
          names[i], v, P3D_CALIBRATION_MAX_IMAGE_SIDE);
      return FALSE;
    }
    sides[i] = (guint) v;
  }
  size->width = sides[0];
  size->height = sides[1];
  return TRUE;
}

static P3dCalibration *
parse_cameras_form (JsonArray * cameras, const gchar * origin, GError ** error)
{
  guint n = json_array_get_length (cameras), i;
  P3dCalibration *calibration;

  if (n == 0) {
    g_set_error (error, P3D_CALIBRATION_ERROR,
        P3D_CALIBRATION_ERROR_SCHEMA, "%s: \"cameras\" is empty", origin);
    return NULL;
  }
  calibration = calibration_new (n);
  for (i = 0; i < n; i++) {
    JsonNode *node = json_array_get_element (cameras, i);
    JsonObject *camera;
    P3dcCameraCalib *calib = &calibration->cameras[i];
    gchar *where;
    gboolean ok;

    if (!JSON_NODE_HOLDS_OBJECT (node)) {
      g_set_error (error, P3D_CALIBRATION_ERROR,
          P3D_CALIBRATION_ERROR_SCHEMA, "%s: cameras[%u] is not an "
          "object", origin, i);
      goto failed;
    }
    camera = json_node_get_object (node);
    if (json_object_has_member (camera, "name")) {
      JsonNode *name = json_object_get_member (camera, "name");

      /* a name that is not a string once left a NULL among the names,
       * which cut g_strfreev () short (and leaked the rest) */
      if (!JSON_NODE_HOLDS_VALUE (name)
          || json_node_get_value_type (name) != G_TYPE_STRING) {
        g_set_error (error, P3D_CALIBRATION_ERROR,
            P3D_CALIBRATION_ERROR_SCHEMA, "%s: cameras[%u].name is not a "
            "string", origin, i);
        goto failed;
      }
      calibration->names[i] = g_strdup (json_node_get_string (name));
    } else {
      calibration->names[i] = g_strdup_printf ("camera%u", i);
    }

    where = g_strdup_printf ("%s: cameras[%u].intrinsics", origin, i);
    ok = read_matrix (json_object_get_member (camera, "intrinsics"), TRUE,
        where, calib->intrinsics, error);
    g_free (where);
    if (!ok)
      goto failed;
    where = g_strdup_printf ("%s: cameras[%u].camera_to_lidar", origin, i);
    ok = read_matrix (json_object_get_member (camera, "camera_to_lidar"),
        FALSE, where, calib->camera_to_lidar, error);
    g_free (where);
    if (!ok)
      goto failed;
    if (json_object_has_member (camera, "img_aug")) {
      where = g_strdup_printf ("%s: cameras[%u].img_aug", origin, i);
      ok = read_matrix (json_object_get_member (camera, "img_aug"), FALSE,
          where, calib->img_aug, error);
      g_free (where);
      if (!ok)
        goto failed;
    } else {
      set_identity (calib->img_aug);
    }
    if (json_object_has_member (camera, "image_size")) {
      where = g_strdup_printf ("%s: cameras[%u].image_size", origin, i);
      ok = read_image_size (json_object_get_member (camera, "image_size"),
          where, &calibration->image_sizes[i], error);
      g_free (where);
      if (!ok)
        goto failed;
    }
  }
  return calibration;

failed:
  p3d_calibration_free (calibration);
  return NULL;
}

/* One of the per-tensor arrays: [cameras][4][4] (3x3 accepted where
 * @allow_3x3, for the intrinsics). */
static gboolean
read_tensor_form_member (JsonObject * root, const gchar * key, guint n,
    gsize offset, gboolean allow_3x3, P3dCalibration * calibration,
    const gchar * origin, GError ** error)
{
  JsonNode *node = json_object_get_member (root, key);
  JsonArray *array;
  guint i;

  if (node == NULL || !JSON_NODE_HOLDS_ARRAY (node)
      || json_array_get_length (array = json_node_get_array (node)) != n) {
    g_set_error (error, P3D_CALIBRATION_ERROR,
        P3D_CALIBRATION_ERROR_SCHEMA, "%s: \"%s\" must be an array of "
        "%u matrices, one per camera", origin, key, n);
    return FALSE;
  }
  for (i = 0; i < n; i++) {
    gchar *where = g_strdup_printf ("%s: %s[%u]", origin, key, i);
    gdouble *m = (gdouble *) ((guint8 *) & calibration->cameras[i] + offset);
    gboolean ok = read_matrix (json_array_get_element (array, i), allow_3x3,
        where, m, error);

    g_free (where);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

static P3dCalibration *
parse_tensor_form (JsonObject * root, const gchar * origin, GError ** error)
{
  JsonNode *intrinsics = json_object_get_member (root, "camera_intrinsics");
  P3dCalibration *calibration;
  JsonArray *order = NULL;
  guint n, i;

  if (!JSON_NODE_HOLDS_ARRAY (intrinsics)
      || (n = json_array_get_length (json_node_get_array (intrinsics))) == 0) {
    g_set_error (error, P3D_CALIBRATION_ERROR,
        P3D_CALIBRATION_ERROR_SCHEMA, "%s: \"camera_intrinsics\" must be "
        "a non-empty array of 4x4 matrices", origin);
    return NULL;
  }
  calibration = calibration_new (n);
  if (!read_tensor_form_member (root, "camera_intrinsics", n,
          G_STRUCT_OFFSET (P3dcCameraCalib, intrinsics), TRUE, calibration,
          origin, error)
      || !read_tensor_form_member (root, "camera2lidar", n,
          G_STRUCT_OFFSET (P3dcCameraCalib, camera_to_lidar), FALSE,
          calibration, origin, error)
      || !read_tensor_form_member (root, "img_aug_matrix", n,
          G_STRUCT_OFFSET (P3dcCameraCalib, img_aug), FALSE, calibration,
          origin, error)) {
    p3d_calibration_free (calibration);
    return NULL;
  }
  if (json_object_has_member (root, "camera_order")
      && JSON_NODE_HOLDS_ARRAY (json_object_get_member (root, "camera_order")))
    order = json_object_get_array_member (root, "camera_order");
  for (i = 0; i < n; i++) {
    JsonNode *name = order && i < json_array_get_length (order) ?
        json_array_get_element (order, i) : NULL;

    calibration->names[i] = name && JSON_NODE_HOLDS_VALUE (name)
        && json_node_get_value_type (name) == G_TYPE_STRING ?
        g_strdup (json_node_get_string (name)) :
        g_strdup_printf ("camera%u", i);
  }
  return calibration;
}

P3dCalibration *
p3d_calibration_parse (const gchar * data, gssize length,
    const gchar * origin, GError ** error)
{
  JsonParser *parser = json_parser_new ();
  P3dCalibration *calibration = NULL;
  GError *parse_error = NULL;
  JsonNode *root;

  if (!p3d_json_parser_load (parser, data, length, &parse_error)) {
    g_set_error (error, P3D_CALIBRATION_ERROR,
        P3D_CALIBRATION_ERROR_SYNTAX, "%s: not valid JSON: %s", origin,
        parse_error->message);
    g_clear_error (&parse_error);
    goto done;
  }
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root)) {
    g_set_error (error, P3D_CALIBRATION_ERROR,
        P3D_CALIBRATION_ERROR_SCHEMA, "%s: the document is not a JSON "
        "object", origin);
    goto done;
  }
  if (json_object_has_member (json_node_get_object (root), "cameras")) {
    JsonNode *cameras = json_object_get_member (json_node_get_object (root),
        "cameras");

    if (!JSON_NODE_HOLDS_ARRAY (cameras)) {
      g_set_error (error, P3D_CALIBRATION_ERROR,
          P3D_CALIBRATION_ERROR_SCHEMA, "%s: \"cameras\" is not an array",
          origin);
      goto done;
    }
    calibration = parse_cameras_form (json_node_get_array (cameras), origin,
        error);
  } else if (json_object_has_member (json_node_get_object (root),
          "camera_intrinsics")) {
    calibration = parse_tensor_form (json_node_get_object (root), origin,
        error);
  } else {
    g_set_error (error, P3D_CALIBRATION_ERROR,
        P3D_CALIBRATION_ERROR_SCHEMA, "%s: neither \"cameras\" nor "
        "\"camera_intrinsics\" is present (see docs/calibration.md)", origin);
  }
done:
  g_object_unref (parser);
  return calibration;
}

/* The whole of @path, at most P3D_CALIBRATION_MAX_FILE_SIZE bytes of a
 * regular file: /dev/zero would otherwise be read for ever, and a FIFO
 * would block the opening thread. */
static gchar *
read_file (const gchar * path, gsize * length, GError ** error)
{
  GString *contents;
  struct stat info;
  gint fd, saved;

  fd = g_open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
  if (fd < 0) {
    saved = errno;
    g_set_error (error, P3D_CALIBRATION_ERROR, saved == ENOENT ?
        P3D_CALIBRATION_ERROR_NOT_FOUND : P3D_CALIBRATION_ERROR_READ,
        "cannot read %s: %s", path, g_strerror (saved));
    return NULL;
  }
  if (fstat (fd, &info) != 0 || !S_ISREG (info.st_mode)) {
    g_set_error (error, P3D_CALIBRATION_ERROR, P3D_CALIBRATION_ERROR_READ,
        "cannot read %s: not a regular file (a calibration is a JSON file)",
        path);
    g_close (fd, NULL);
    return NULL;
  }
  if (info.st_size > P3D_CALIBRATION_MAX_FILE_SIZE) {
    g_set_error (error, P3D_CALIBRATION_ERROR, P3D_CALIBRATION_ERROR_SCHEMA,
        "%s: %" G_GINT64_FORMAT " bytes, more than the %d a calibration "
        "file may hold", path, (gint64) info.st_size,
        P3D_CALIBRATION_MAX_FILE_SIZE);
    g_close (fd, NULL);
    return NULL;
  }
  /* a file that grows while it is read stops at the limit too */
  contents = g_string_sized_new (info.st_size + 1);
  for (;;) {
    gchar block[4096];
    gssize n = read (fd, block, sizeof (block));

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      saved = errno;
      g_set_error (error, P3D_CALIBRATION_ERROR, P3D_CALIBRATION_ERROR_READ,
          "cannot read %s: %s", path, g_strerror (saved));
      break;
    }
    if (n == 0) {
      g_close (fd, NULL);
      *length = contents->len;
      return g_string_free (contents, FALSE);
    }
    if (contents->len + n > P3D_CALIBRATION_MAX_FILE_SIZE) {
      g_set_error (error, P3D_CALIBRATION_ERROR, P3D_CALIBRATION_ERROR_SCHEMA,
          "%s: more than the %d bytes a calibration file may hold", path,
          P3D_CALIBRATION_MAX_FILE_SIZE);
      break;
    }
    g_string_append_len (contents, block, n);
  }
  g_close (fd, NULL);
  g_string_free (contents, TRUE);
  return NULL;
}

P3dCalibration *
p3d_calibration_load (const gchar * path, GError ** error)
{
  gchar *contents;
  gsize length = 0;
  P3dCalibration *calibration;

  contents = read_file (path, &length, error);
  if (contents == NULL)
    return NULL;
  calibration = p3d_calibration_parse (contents, length, path, error);
  g_free (contents);
  return calibration;
}

void
p3d_calibration_free (P3dCalibration * calibration)
{
  if (calibration == NULL)
    return;
  g_strfreev (calibration->names);
  g_free (calibration->cameras);
  g_free (calibration->image_sizes);
  g_free (calibration);
}
