/* bevpool's test rig; see p3dtest-bevpoolrig.h. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dtest-bevpoolrig.h"
#include "p3dtest-elem.h"
#include "half.h"
#include "p3dtest.h"

/* m = rotation about +z by @yaw, times m (the upper 3x3 and the
 * translation column). */
static void
rotate_about_z (gdouble * m, gdouble yaw)
{
  gdouble c = cos (yaw), s = sin (yaw), result[16];
  guint col;

  memcpy (result, m, sizeof (result));
  for (col = 0; col < 4; col++) {
    result[0 * 4 + col] = c * m[0 * 4 + col] - s * m[1 * 4 + col];
    result[1 * 4 + col] = s * m[0 * 4 + col] + c * m[1 * 4 + col];
  }
  memcpy (m, result, sizeof (result));
}

static void
set_matrix (gdouble * m, const gdouble rotation[9],
    const gdouble translation[3])
{
  guint r, c;

  memset (m, 0, 16 * sizeof (gdouble));
  for (r = 0; r < 3; r++) {
    for (c = 0; c < 3; c++)
      m[r * 4 + c] = rotation[r * 3 + c];
    m[r * 4 + 3] = translation[r];
  }
  m[15] = 1.0;
}

void
bevpoolrig_cameras (guint n_cameras, guint variant, P3dcCameraCalib * cameras)
{
  /* camera axes (x right, y down, z ahead) in the lidar frame (x ahead,
   * y left, z up): looking ahead, to the left, behind */
  static const gdouble rotations[3][9] = {
    {0, 0, 1, -1, 0, 0, 0, -1, 0},
    {1, 0, 0, 0, 0, 1, 0, -1, 0},
    {0, 0, -1, 1, 0, 0, 0, -1, 0},
  };
  static const gdouble translations[3][3] = {
    {0.5, 0.0, 1.0}, {0.0, 0.3, 1.0}, {-0.5, 0.0, 1.2},
  };
  /* focal length and principal point of each camera's raw image */
  static const gdouble intrinsics[3][3] = {
    {40.0, 24.0, 16.0}, {80.0, 48.0, 32.0}, {36.0, 23.5, 15.5},
  };
  guint i;

  g_assert (n_cameras <= 3);
  for (i = 0; i < n_cameras; i++) {
    P3dcCameraCalib *camera = &cameras[i];
    gdouble focal = intrinsics[i][0] + (variant ? 2.0 : 0.0);
    gdouble zero[3] = { 0.0, 0.0, 0.0 };
    gdouble k[9] = { focal, 0, intrinsics[i][1], 0, focal, intrinsics[i][2],
      0, 0, 1
    };

    set_matrix (camera->intrinsics, k, zero);
    set_matrix (camera->camera_to_lidar, rotations[i], translations[i]);
    if (variant) {
      rotate_about_z (camera->camera_to_lidar, 0.15);
      camera->camera_to_lidar[3] += 0.2;
      camera->camera_to_lidar[7] -= 0.1;
      camera->camera_to_lidar[11] += 0.05;
    }
    if (i == 1) {
      /* the network sees the raw image halved and shifted */
      gdouble aug[9] = { 0.5, 0, 0, 0, 0.5, 0, 0, 0, 1 };
      gdouble shift[3] = { 2.0, -1.0, 0.0 };

      set_matrix (camera->img_aug, aug, shift);
    } else {
      gdouble identity[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };

      set_matrix (camera->img_aug, identity, zero);
    }
  }
}

static gboolean
is_identity (const gdouble * m)
{
  guint i;

  for (i = 0; i < 16; i++)
    if (m[i] != (i % 5 == 0 ? 1.0 : 0.0))
      return FALSE;
  return TRUE;
}

static void
append_matrix (GString * json, const gdouble * m, guint n)
{
  guint r, c;

  g_string_append_c (json, '[');
  for (r = 0; r < n; r++) {
    g_string_append (json, r ? ", [" : "[");
    for (c = 0; c < n; c++) {
      gchar number[G_ASCII_DTOSTR_BUF_SIZE];

      g_ascii_formatd (number, sizeof (number), "%.17g", m[r * 4 + c]);
      g_string_append_printf (json, "%s%s", c ? ", " : "", number);
    }
    g_string_append_c (json, ']');
  }
  g_string_append_c (json, ']');
}

gchar *
bevpoolrig_calibration_json (const P3dcCameraCalib * cameras, guint n_cameras,
    gboolean tensor_form)
{
  GString *json = g_string_new ("{\n");
  guint i;

  if (tensor_form) {
    static const gchar *const keys[3] = { "camera_intrinsics",
      "camera2lidar", "img_aug_matrix"
    };
    guint k;

    g_string_append (json, "  \"camera_order\": [");
    for (i = 0; i < n_cameras; i++)
      g_string_append_printf (json, "%s\"cam%u\"", i ? ", " : "", i);
    g_string_append (json, "],\n");
    for (k = 0; k < 3; k++) {
      g_string_append_printf (json, "  \"%s\": [", keys[k]);
      for (i = 0; i < n_cameras; i++) {
        const gdouble *m = k == 0 ? cameras[i].intrinsics : k == 1 ?
            cameras[i].camera_to_lidar : cameras[i].img_aug;

        g_string_append (json, i ? ",\n    " : "\n    ");
        append_matrix (json, m, 4);
      }
      g_string_append_printf (json, "]%s\n", k < 2 ? "," : "");
    }
  } else {
    g_string_append (json, "  \"cameras\": [");
    for (i = 0; i < n_cameras; i++) {
      g_string_append_printf (json, "%s\n    {\"name\": \"cam%u\",\n"
          "     \"intrinsics\": ", i ? "," : "", i);
      append_matrix (json, cameras[i].intrinsics, 3);
      g_string_append (json, ",\n     \"camera_to_lidar\": ");
      append_matrix (json, cameras[i].camera_to_lidar, 4);
      /* an identity augmentation may be left out */
      if (!is_identity (cameras[i].img_aug)) {
        g_string_append (json, ",\n     \"img_aug\": ");
        append_matrix (json, cameras[i].img_aug, 4);
      }
      g_string_append (json, "}");
    }
    g_string_append (json, "]\n");
  }
  g_string_append (json, "}\n");
  return g_string_free (json, FALSE);
}

gchar *
bevpoolrig_make_dir (void)
{
  GError *error = NULL;
  gchar *dir = g_dir_make_tmp ("bevpool-test-XXXXXX", &error);

  fail_unless (dir != NULL, "%s", error ? error->message : "?");
  return dir;
}

gchar *
bevpoolrig_write_calibration (const gchar * dir, const gchar * name,
    guint n_cameras, guint variant, gboolean tensor_form,
    P3dcCameraCalib * cameras)
{
  gchar *json, *path;

  bevpoolrig_cameras (n_cameras, variant, cameras);
  json = bevpoolrig_calibration_json (cameras, n_cameras, tensor_form);
  path = elemtest_write_file (dir, name, json);
  g_free (json);
  return path;
}

const BevpoolrigConfig bevpoolrig_small_config = {
  2, 3, 6, 4,
  {-8.0, 8.0, 1.0}, {-4.0, 4.0, 1.0}, {-1.0, 5.0, 6.0}, {1.0, 9.0, 1.0},
  P3DC_BEV_ROUND_TRUNCATE, P3DC_BEV_LAYOUT_YX
};

gchar *
bevpoolrig_caps (const BevpoolrigConfig * c, guint depth_bins, gboolean half)
{
  return g_strdup_printf ("application/x-camera-features, format=%s, "
      "cameras=(int)%u, channels=(int)%u, depth-bins=(int)%u, width=(int)%u, "
      "height=(int)%u, framerate=(fraction)10/1", half ? "F16" : "F32",
      c->cameras, c->channels, depth_bins, c->feat_width, c->feat_height);
}

gchar *
bevpoolrig_properties (const BevpoolrigConfig * c, const gchar * calibration,
    const gchar * extra)
{
  return g_strdup_printf ("calibration=\"%s\" "
      "image-width=%u image-height=%u xbound=\"<%g,%g,%g>\" "
      "ybound=\"<%g,%g,%g>\" zbound=\"<%g,%g,%g>\" dbound=\"<%g,%g,%g>\" "
      "cell-rounding=%s layout=%s %s", calibration, BEVPOOLRIG_IMAGE_WIDTH,
      BEVPOOLRIG_IMAGE_HEIGHT, c->xbound[0], c->xbound[1], c->xbound[2],
      c->ybound[0], c->ybound[1], c->ybound[2], c->zbound[0], c->zbound[1],
      c->zbound[2], c->dbound[0], c->dbound[1], c->dbound[2],
      c->rounding == P3DC_BEV_ROUND_FLOOR ? "floor" : "truncate",
      c->layout == P3DC_BEV_LAYOUT_XY ? "xy" : "yx", extra ? extra : "");
}

static void
fill_random (gpointer data, gsize n, gboolean half, gfloat lo, gfloat hi,
    P3dTestRng * rng)
{
  gsize i;

  for (i = 0; i < n; i++) {
    gfloat value = p3d_test_rng_uniform (rng, lo, hi);

    if (half)
      ((guint16 *) data)[i] = p3dc_float_to_half (value);
    else
      ((gfloat *) data)[i] = value;
  }
}

void
bevpoolrig_frame_make (BevpoolrigFrame * f, const BevpoolrigConfig * c,
    guint depth_bins, gboolean half, guint64 seed)
{
  gsize pixels = (gsize) c->cameras * c->feat_width * c->feat_height;
  gsize element = half ? 2 : 4;
  P3dTestRng rng;

  p3d_test_rng_init (&rng, seed);
  f->half = half;
  f->sizes[0] = pixels * c->channels * element;
  f->sizes[1] = pixels * depth_bins * element;
  f->tensors[0] = g_malloc (f->sizes[0]);
  f->tensors[1] = g_malloc (f->sizes[1]);
  fill_random (f->tensors[0], pixels * c->channels, half, -1.0f, 1.0f, &rng);
  fill_random (f->tensors[1], pixels * depth_bins, half, 0.0f, 1.0f, &rng);
}

void
bevpoolrig_frame_clear (BevpoolrigFrame * f)
{
  g_free (f->tensors[0]);
  g_free (f->tensors[1]);
}

GstBuffer *
bevpoolrig_frame_buffer (const BevpoolrigFrame * f)
{
  return elemtest_tensors_buffer (2, (const gconstpointer *) f->tensors,
      f->sizes);
}
