/* Velodyne laser calibrations: ros-drivers/velodyne's YAML files (read with
 * libyaml's document loader) and the fixed angles of the models that have
 * them. */
#include <math.h>
#include <string.h>

#include <yaml.h>

#include "velodyneparse-decoder.h"

G_DEFINE_QUARK (p3d - velodyne - calibration - error - quark,
    p3d_velodyne_calibration_error);

/* Elevation and rot_correction of each laser, degrees, as ros-drivers'
 * files give them (rot_correction: the laser points that far before the
 * block's azimuth). */
typedef struct
{
  gdouble elevation;
  gdouble rot;
} BuiltinLaser;

static const BuiltinLaser vlp16_lasers[16] = {
  {-15, 0}, {1, 0}, {-13, 0}, {3, 0}, {-11, 0}, {5, 0}, {-9, 0}, {7, 0},
  {-7, 0}, {9, 0}, {-5, 0}, {11, 0}, {-3, 0}, {13, 0}, {-1, 0}, {15, 0},
};

static const BuiltinLaser puck_hires_lasers[16] = {
  {-10, 0}, {0.667, 0}, {-8.667, 0}, {2, 0}, {-7.333, 0}, {3.333, 0},
  {-6, 0}, {4.667, 0}, {-4.667, 0}, {6, 0}, {-3.333, 0}, {7.333, 0},
  {-2, 0}, {8.667, 0}, {-0.667, 0}, {10, 0},
};

static const BuiltinLaser vlp32c_lasers[32] = {
  {-25, -1.4}, {-1, 4.2}, {-1.667, -1.4}, {-15.639, 1.4},
  {-11.31, -1.4}, {0, 1.4}, {-0.667, -4.2}, {-8.843, 1.4},
  {-7.254, -1.4}, {0.333, 4.2}, {-0.333, -1.4}, {-6.148, 1.4},
  {-5.333, -4.2}, {1.333, 1.4}, {0.667, -4.2}, {-4, 1.4},
  {-4.667, -1.4}, {1.667, 4.2}, {1, -1.4}, {-3.667, 4.2},
  {-3.333, -4.2}, {3.333, 1.4}, {2.333, -1.4}, {-2.667, 1.4},
  {-3, -1.4}, {7, 1.4}, {4.667, -1.4}, {-2.333, 4.2},
  {-2, -4.2}, {15, 1.4}, {10.333, -1.4}, {-1.333, 1.4},
};

static const BuiltinLaser hdl32e_lasers[32] = {
  {-30.67, 0}, {-9.33, 0}, {-29.33, 0}, {-8, 0}, {-28, 0}, {-6.67, 0},
  {-26.67, 0}, {-5.33, 0}, {-25.33, 0}, {-4, 0}, {-24, 0}, {-2.67, 0},
  {-22.67, 0}, {-1.33, 0}, {-21.33, 0}, {0, 0}, {-20, 0}, {1.33, 0},
  {-18.67, 0}, {2.67, 0}, {-17.33, 0}, {4, 0}, {-16, 0}, {5.33, 0},
  {-14.67, 0}, {6.67, 0}, {-13.33, 0}, {8, 0}, {-12, 0}, {9.33, 0},
  {-10.67, 0}, {10.67, 0},
};

/* The VLS-128's elevations; its rot_correction repeats with the eight
 * lasers that fire together. */
static const gdouble vls128_elevations[128] = {
  -11.742, -1.99, 3.4, -5.29, -0.78, 4.61, -4.08, 1.31,
  -6.5, -1.11, 4.28, -4.41, 0.1, 6.48, -3.2, 2.19,
  -3.86, 1.53, -9.244, -1.77, 2.74, -5.95, -0.56, 4.83,
  -2.98, 2.41, -6.28, -0.89, 3.62, -5.07, 0.32, 7.58,
  -0.34, 5.18, -3.64, 1.75, -25, -2.43, 2.96, -5.73,
  0.54, 9.7, -2.76, 2.63, -7.65, -1.55, 3.84, -4.85,
  3.18, -5.51, -0.12, 5.73, -4.3, 1.09, -16.042, -2.21,
  4.06, -4.63, 0.76, 15, -3.42, 1.97, -6.85, -1.33,
  -5.62, -0.23, 5.43, -3.53, 0.98, -19.582, -2.32, 3.07,
  -4.74, 0.65, 11.75, -2.65, 1.86, -7.15, -1.44, 3.95,
  -2.1, 3.29, -5.4, -0.01, 4.5, -4.19, 1.2, -13.565,
  -1.22, 4.17, -4.52, 0.87, 6.08, -3.31, 2.08, -6.65,
  1.42, -10.346, -1.88, 3.51, -6.06, -0.67, 4.72, -3.97,
  2.3, -6.39, -1, 4.39, -5.18, 0.21, 6.98, -3.09,
  4.98, -3.75, 1.64, -8.352, -2.54, 2.85, -5.84, -0.45,
  8.43, -2.87, 2.52, -6.17, -1.66, 3.73, -4.96, 0.43,
};

static const gdouble vls128_rot[8] = {
  -6.354, -4.548, -2.732, -0.911, 0.911, 2.732, 4.548, 6.354,
};

#define DEG (G_PI / 180.0)

/* Each laser's ring: the rank of its elevation, the lowest 0 (equal
 * elevations by laser number). */
static void
set_rings (P3dVelodyneCalibration * calibration)
{
  guint i, j;

  for (i = 0; i < calibration->n_lasers; i++) {
    const P3dVelodyneLaser *a = &calibration->lasers[i];
    guint rank = 0;

    for (j = 0; j < calibration->n_lasers; j++) {
      const P3dVelodyneLaser *b = &calibration->lasers[j];

      if (b->vert_correction < a->vert_correction
          || (b->vert_correction == a->vert_correction && j < i))
        rank++;
    }
    calibration->lasers[i].ring = rank;
  }
}

gboolean
p3d_velodyne_calibration_builtin (P3dVelodyneModel model,
    P3dVelodyneCalibration * calibration)
{
  const BuiltinLaser *table = NULL;
  guint n = 0, l;

  memset (calibration, 0, sizeof (*calibration));
  switch (model) {
    case P3D_VELODYNE_MODEL_VLP16:
      table = vlp16_lasers;
      n = 16;
      break;
    case P3D_VELODYNE_MODEL_PUCK_HIRES:
      table = puck_hires_lasers;
      n = 16;
      break;
    case P3D_VELODYNE_MODEL_VLP32C:
      table = vlp32c_lasers;
      n = 32;
      break;
    case P3D_VELODYNE_MODEL_HDL32E:
      table = hdl32e_lasers;
      n = 32;
      break;
    case P3D_VELODYNE_MODEL_VLS128:
      n = 128;
      break;
    default:
      return FALSE;
  }
  calibration->n_lasers = n;
  for (l = 0; l < n; l++) {
    P3dVelodyneLaser *laser = &calibration->lasers[l];

    if (table != NULL) {
      laser->vert_correction = table[l].elevation * DEG;
      laser->rot_correction = table[l].rot * DEG;
    } else {
      laser->vert_correction = vls128_elevations[l] * DEG;
      laser->rot_correction = vls128_rot[l % 8] * DEG;
    }
  }
  set_rings (calibration);
  return TRUE;
}

/* ---------------------------------------------------------------------- */
/* The YAML file */

typedef struct
{
  yaml_document_t *document;
  GError **error;
} Reader;

static gboolean
fail (Reader * reader, P3dVelodyneCalibrationError code,
    const yaml_node_t * node, const gchar * format, ...)
G_GNUC_PRINTF (4, 5);

     static gboolean
         fail (Reader * reader, P3dVelodyneCalibrationError code,
    const yaml_node_t * node, const gchar * format, ...)
{
  gchar *message;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  if (node != NULL)
    g_set_error (reader->error, P3D_VELODYNE_CALIBRATION_ERROR, code,
        "line %lu: %s", (unsigned long) node->start_mark.line + 1, message);
  else
    g_set_error_literal (reader->error, P3D_VELODYNE_CALIBRATION_ERROR, code,
        message);
  g_free (message);
  return FALSE;
}

/* The value of @key in the mapping @map, or NULL. */
static yaml_node_t *
lookup (Reader * reader, yaml_node_t * map, const gchar * key)
{
  yaml_node_pair_t *pair;

  for (pair = map->data.mapping.pairs.start;
      pair < map->data.mapping.pairs.top; pair++) {
    yaml_node_t *k = yaml_document_get_node (reader->document, pair->key);

    if (k != NULL && k->type == YAML_SCALAR_NODE
        && k->data.scalar.length == strlen (key)
        && memcmp (k->data.scalar.value, key, k->data.scalar.length) == 0)
      return yaml_document_get_node (reader->document, pair->value);
  }
  return NULL;
}

/* A scalar's text, NUL-terminated by libyaml. */
static const gchar *
scalar_text (const yaml_node_t * node)
{
  return (const gchar *) node->data.scalar.value;
}

/* @key of @map as a finite number within [@min, @max]; @required: an
 * absent key is an error, else it leaves *value alone. @what names the
 * mapping in messages ("laser 3"). */
static gboolean
read_number (Reader * reader, yaml_node_t * map, const gchar * what,
    const gchar * key, gboolean required, gdouble min, gdouble max,
    gdouble * value)
{
  yaml_node_t *node = lookup (reader, map, key);
  const gchar *text;
  gchar *end = NULL;
  gdouble v;

  if (node == NULL) {
    if (required)
      return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, map,
          "%s has no %s", what, key);
    return TRUE;
  }
  if (node->type != YAML_SCALAR_NODE)
    return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, node,
        "%s: %s is not a number", what, key);
  text = scalar_text (node);
  v = g_ascii_strtod (text, &end);
  if (end == text || *end != '\0' || !isfinite (v)) {
    gchar *shown = g_strescape (text, NULL);

    fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, node,
        "%s: %s is \"%.40s\", not a finite number", what, key, shown);
    g_free (shown);
    return FALSE;
  }
  if (v < min || v > max)
    return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_VALUE, node,
        "%s: %s is %g, outside [%g, %g]", what, key, v, min, max);
  *value = v;
  return TRUE;
}

static gboolean
read_bool (Reader * reader, yaml_node_t * map, const gchar * what,
    const gchar * key, gboolean * value)
{
  yaml_node_t *node = lookup (reader, map, key);
  const gchar *text;

  if (node == NULL)
    return TRUE;
  if (node->type == YAML_SCALAR_NODE) {
    text = scalar_text (node);
    if (g_ascii_strcasecmp (text, "true") == 0
        || g_ascii_strcasecmp (text, "yes") == 0) {
      *value = TRUE;
      return TRUE;
    }
    if (g_ascii_strcasecmp (text, "false") == 0
        || g_ascii_strcasecmp (text, "no") == 0) {
      *value = FALSE;
      return TRUE;
    }
  }
  return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, node,
      "%s: %s is neither true nor false", what, key);
}

/* Distances and offsets within these metres; angles within a turn. */
#define MAX_CORRECTION 10.0
#define MAX_OFFSET 1.0

static gboolean
read_laser (Reader * reader, yaml_node_t * map, guint index,
    P3dVelodyneCalibration * calibration, gboolean * seen)
{
  P3dVelodyneLaser laser = { 0 };
  gdouble id = 0;
  gchar what[32];
  guint l;

  g_snprintf (what, sizeof (what), "laser entry %u", index);
  if (map->type != YAML_MAPPING_NODE)
    return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, map,
        "%s is not a mapping", what);
  if (!read_number (reader, map, what, "laser_id", TRUE, 0,
          calibration->n_lasers - 1, &id))
    return FALSE;
  if (id != floor (id))
    return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_VALUE, map,
        "%s: laser_id %g is not a whole number", what, id);
  l = (guint) id;
  g_snprintf (what, sizeof (what), "laser %u", l);
  if (seen[l])
    return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_VALUE, map,
        "%s appears twice", what);
  seen[l] = TRUE;
  if (!read_number (reader, map, what, "rot_correction", TRUE, -2 * G_PI,
          2 * G_PI, &laser.rot_correction)
      || !read_number (reader, map, what, "vert_correction", TRUE,
          -G_PI / 2, G_PI / 2, &laser.vert_correction)
      || !read_number (reader, map, what, "dist_correction", FALSE,
          -MAX_CORRECTION, MAX_CORRECTION, &laser.dist_correction)
      || !read_number (reader, map, what, "dist_correction_x", FALSE,
          -MAX_CORRECTION, MAX_CORRECTION, &laser.dist_correction_x)
      || !read_number (reader, map, what, "dist_correction_y", FALSE,
          -MAX_CORRECTION, MAX_CORRECTION, &laser.dist_correction_y)
      || !read_bool (reader, map, what, "two_pt_correction_available",
          &laser.two_point)
      || !read_number (reader, map, what, "vert_offset_correction", FALSE,
          -MAX_OFFSET, MAX_OFFSET, &laser.vert_offset)
      || !read_number (reader, map, what, "horiz_offset_correction", FALSE,
          -MAX_OFFSET, MAX_OFFSET, &laser.horiz_offset))
    return FALSE;
  calibration->lasers[l] = laser;
  return TRUE;
}

static gboolean
read_document (Reader * reader, P3dVelodyneCalibration * calibration)
{
  yaml_node_t *root = yaml_document_get_root_node (reader->document);
  yaml_node_t *lasers;
  gboolean seen[P3D_VELODYNE_MAX_LASERS] = { FALSE };
  gdouble n = 0, resolution = 0;
  yaml_node_item_t *item;
  guint index = 0, l;

  if (root == NULL || root->type != YAML_MAPPING_NODE)
    return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, root,
        "the file is not a mapping with num_lasers and lasers");
  if (!read_number (reader, root, "the file", "num_lasers", TRUE, 1,
          P3D_VELODYNE_MAX_LASERS, &n)
      || !read_number (reader, root, "the file", "distance_resolution",
          FALSE, 0.0005, 0.1, &resolution))
    return FALSE;
  if (n != floor (n))
    return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_VALUE, root,
        "num_lasers %g is not a whole number", n);
  calibration->n_lasers = (guint) n;
  calibration->distance_resolution = resolution;

  lasers = lookup (reader, root, "lasers");
  if (lasers == NULL || lasers->type != YAML_SEQUENCE_NODE)
    return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,
        lasers != NULL ? lasers : root, "the file has no list of lasers");
  for (item = lasers->data.sequence.items.start;
      item < lasers->data.sequence.items.top; item++, index++) {
    yaml_node_t *map = yaml_document_get_node (reader->document, *item);

    if (index >= calibration->n_lasers)
      return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_VALUE, map,
          "more laser entries than num_lasers (%u)", calibration->n_lasers);
    if (map == NULL || !read_laser (reader, map, index, calibration, seen))
      return map != NULL ? FALSE : fail (reader,
          P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, lasers, "laser entry %u "
          "is empty", index);
  }
  for (l = 0; l < calibration->n_lasers; l++)
    if (!seen[l])
      return fail (reader, P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, lasers,
          "laser %u is missing (num_lasers is %u)", l, calibration->n_lasers);
  set_rings (calibration);
  return TRUE;
}

gboolean
p3d_velodyne_calibration_parse (const gchar * text, gsize length,
    P3dVelodyneCalibration * calibration, GError ** error)
{
  yaml_parser_t parser;
  yaml_document_t document;
  Reader reader = { &document, error };
  gboolean ok;

  memset (calibration, 0, sizeof (*calibration));
  if (length > P3D_VELODYNE_MAX_CALIBRATION_SIZE) {
    g_set_error (error, P3D_VELODYNE_CALIBRATION_ERROR,
        P3D_VELODYNE_CALIBRATION_ERROR_READ, "%" G_GSIZE_FORMAT " bytes, "
        "more than a calibration file holds (%d)", length,
        P3D_VELODYNE_MAX_CALIBRATION_SIZE);
    return FALSE;
  }
  if (!yaml_parser_initialize (&parser)) {
    g_set_error_literal (error, P3D_VELODYNE_CALIBRATION_ERROR,
        P3D_VELODYNE_CALIBRATION_ERROR_READ, "out of memory");
    return FALSE;
  }
  yaml_parser_set_input_string (&parser, (const unsigned char *) text, length);
  if (!yaml_parser_load (&parser, &document)) {
    gchar *problem = g_strescape (parser.problem ? parser.problem :
        "unreadable", NULL);

    g_set_error (error, P3D_VELODYNE_CALIBRATION_ERROR,
        P3D_VELODYNE_CALIBRATION_ERROR_SYNTAX, "line %lu: not YAML: %s",
        (unsigned long) parser.problem_mark.line + 1, problem);
    g_free (problem);
    yaml_parser_delete (&parser);
    return FALSE;
  }
  ok = read_document (&reader, calibration);
  yaml_document_delete (&document);
  yaml_parser_delete (&parser);
  return ok;
}

gboolean
p3d_velodyne_calibration_load (const gchar * path,
    P3dVelodyneCalibration * calibration, GError ** error)
{
  gchar *text = NULL;
  gsize length = 0;
  GError *read_error = NULL;
  gboolean ok;

  if (!g_file_test (path, G_FILE_TEST_EXISTS)) {
    g_set_error (error, P3D_VELODYNE_CALIBRATION_ERROR,
        P3D_VELODYNE_CALIBRATION_ERROR_NOT_FOUND, "no such file");
    return FALSE;
  }
  if (!g_file_get_contents (path, &text, &length, &read_error)) {
    g_set_error_literal (error, P3D_VELODYNE_CALIBRATION_ERROR,
        P3D_VELODYNE_CALIBRATION_ERROR_READ, read_error->message);
    g_error_free (read_error);
    return FALSE;
  }
  ok = p3d_velodyne_calibration_parse (text, length, calibration, error);
  g_free (text);
  return ok;
}
