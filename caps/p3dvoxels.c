/* application/x-voxels <-> P3dVoxelsInfo. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "p3dcapsfields.h"
#include "p3dvoxels.h"

#define GST_CAT_DEFAULT p3d_caps_debug

gboolean
p3d_voxel_grid_set (P3dVoxelGrid * grid, const gdouble * voxel_size,
    const gdouble * range)
{
  P3dVoxelGrid parsed;

  p3d_caps_debug_init ();
  memcpy (parsed.voxel_size, voxel_size, sizeof (parsed.voxel_size));
  memcpy (parsed.range, range, sizeof (parsed.range));
  if (!p3d_grid_from_range (voxel_size, range, 3, parsed.grid))
    return FALSE;
  *grid = parsed;
  return TRUE;
}

gboolean
p3d_voxel_grid_is_equal (const P3dVoxelGrid * a, const P3dVoxelGrid * b)
{
  return memcmp (a->grid, b->grid, sizeof (a->grid)) == 0
      && memcmp (a->voxel_size, b->voxel_size, sizeof (a->voxel_size)) == 0
      && memcmp (a->range, b->range, sizeof (a->range)) == 0;
}

/* A millionth of a voxel: float32 indices of a grid of a few thousand
 * cells cannot tell a smaller remainder from none. */
#define WHOLE_TOLERANCE 1e-6

static gboolean
axis_is_whole (const P3dVoxelGrid * grid, guint axis)
{
  gdouble cells = (grid->range[3 + axis] - grid->range[axis]) /
      grid->voxel_size[axis];

  return fabs (cells - grid->grid[axis]) <= WHOLE_TOLERANCE;
}

gboolean
p3d_voxel_grid_is_whole (const P3dVoxelGrid * grid)
{
  return axis_is_whole (grid, 0) && axis_is_whole (grid, 1)
      && axis_is_whole (grid, 2);
}

void
p3d_voxel_grid_get_effective_range (const P3dVoxelGrid * grid,
    gdouble * effective_range)
{
  guint i;

  for (i = 0; i < 3; i++) {
    effective_range[i] = grid->range[i];
    /* a whole axis keeps max as written, not max plus rounding noise */
    effective_range[3 + i] = axis_is_whole (grid, i) ? grid->range[3 + i] :
        grid->range[i] + grid->grid[i] * grid->voxel_size[i];
  }
}

/* A present effective-range must be the one the grid gives, to the
 * precision of a value written as text. */
static gboolean
effective_range_agrees (const GstStructure * s, const P3dVoxelGrid * grid)
{
  gdouble given[6], expected[6];
  guint i;

  if (!gst_structure_has_field (s, "effective-range"))
    return TRUE;
  if (!p3d_structure_get_double_array (s, "effective-range", 6, given))
    return FALSE;
  p3d_voxel_grid_get_effective_range (grid, expected);
  for (i = 0; i < 6; i++) {
    if (fabs (given[i] - expected[i]) > 1e-9 * MAX (1.0, fabs (expected[i]))) {
      P3D_CAPS_REFUSE ("effective-range[%u] = %.17g, but range, "
          "voxel-size and grid give %.17g", i, given[i], expected[i]);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
p3d_structure_get_voxel_grid (const GstStructure * s, P3dVoxelGrid * grid)
{
  gdouble voxel_size[3], range[6];
  guint cells[3], i;
  P3dVoxelGrid parsed;

  if (!p3d_structure_get_double_array (s, "voxel-size", 3, voxel_size)
      || !p3d_structure_get_double_array (s, "range", 6, range)
      || !p3d_structure_get_uint_array (s, "grid", 3, 1, G_MAXINT32, cells)
      || !p3d_voxel_grid_set (&parsed, voxel_size, range))
    return FALSE;
  for (i = 0; i < 3; i++) {
    if (cells[i] != parsed.grid[i]) {
      P3D_CAPS_REFUSE ("grid[%u] = %u, but range and voxel-size give %u",
          i, cells[i], parsed.grid[i]);
      return FALSE;
    }
  }
  if (!effective_range_agrees (s, &parsed))
    return FALSE;
  *grid = parsed;
  return TRUE;
}

void
p3d_structure_set_voxel_grid (GstStructure * s, const P3dVoxelGrid * grid)
{
  gdouble effective_range[6];

  p3d_structure_set_uint_array (s, "grid", 3, grid->grid);
  p3d_structure_set_double_array (s, "voxel-size", 3, grid->voxel_size);
  p3d_structure_set_double_array (s, "range", 6, grid->range);
  p3d_voxel_grid_get_effective_range (grid, effective_range);
  p3d_structure_set_double_array (s, "effective-range", 6, effective_range);
}

void
p3d_voxels_info_init (P3dVoxelsInfo * info)
{
  g_return_if_fail (info != NULL);
  memset (info, 0, sizeof (*info));
  info->finfo = p3d_point_format_get_info (P3D_POINT_FORMAT_UNKNOWN);
  info->fps_d = 1;
}

static gboolean
voxels_sizes_valid (guint max_voxels, guint max_points, guint channels)
{
  if (max_voxels < 1 || max_voxels > P3D_VOXELS_MAX_VOXELS) {
    P3D_CAPS_REFUSE ("max-voxels %u outside [1, %u]", max_voxels,
        P3D_VOXELS_MAX_VOXELS);
    return FALSE;
  }
  if (max_points < 1 || max_points > P3D_VOXELS_MAX_POINTS) {
    P3D_CAPS_REFUSE ("max-points %u outside [1, %u]", max_points,
        P3D_VOXELS_MAX_POINTS);
    return FALSE;
  }
  /* The whole record, so that filesink can write a buffer (and with it
   * every tensor, each smaller than the record, fits a buffer pool). */
  if (p3d_voxels_get_record_size (max_voxels, max_points, channels) >
      P3D_RECORD_MAX_BYTES) {
    P3D_CAPS_REFUSE ("%u voxels of %u points of %u channels make a "
        "record of %" G_GUINT64_FORMAT " bytes, more than %" G_GSIZE_FORMAT,
        max_voxels, max_points, channels,
        p3d_voxels_get_record_size (max_voxels, max_points, channels),
        P3D_RECORD_MAX_BYTES);
    return FALSE;
  }
  return TRUE;
}

guint64
p3d_voxels_get_record_size (guint max_voxels, guint max_points, guint channels)
{
  /* points [V][P][C] float32, num-points [V] uint32, coords [V][4] int32,
   * count uint32: as p3d_voxels_info_get_layout() */
  return (guint64) max_voxels *max_points * channels * sizeof (gfloat) +
      (guint64) max_voxels *(sizeof (guint32) + 4 * sizeof (gint32)) +
      sizeof (guint32);
}

gboolean
p3d_voxels_info_set (P3dVoxelsInfo * info, P3dPointFormat format,
    guint max_voxels, guint max_points, const gdouble * voxel_size,
    const gdouble * range)
{
  const P3dPointFormatInfo *finfo;

  g_return_val_if_fail (info != NULL, FALSE);
  p3d_caps_debug_init ();
  if (format == P3D_POINT_FORMAT_UNKNOWN
      || p3d_point_format_to_string (format) == NULL)
    return FALSE;
  finfo = p3d_point_format_get_info (format);
  if (!voxels_sizes_valid (max_voxels, max_points, finfo->channels)
      || !p3d_voxel_grid_set (&info->grid, voxel_size, range))
    return FALSE;
  info->finfo = finfo;
  info->max_voxels = max_voxels;
  info->max_points = max_points;
  return TRUE;
}

gboolean
p3d_voxels_info_from_caps (P3dVoxelsInfo * info, const GstCaps * caps)
{
  const GstStructure *s;
  P3dVoxelsInfo parsed;
  P3dPointFormat format;
  guint channels;

  g_return_val_if_fail (info != NULL, FALSE);
  s = p3d_caps_get_fixed_structure (caps, P3D_MEDIA_TYPE_VOXELS);
  if (s == NULL)
    return FALSE;
  p3d_voxels_info_init (&parsed);
  format = p3d_point_format_from_string (gst_structure_get_string (s,
          "format"));
  if (format == P3D_POINT_FORMAT_UNKNOWN) {
    P3D_CAPS_REFUSE ("unknown point format '%s'",
        GST_STR_NULL (gst_structure_get_string (s, "format")));
    return FALSE;
  }
  parsed.finfo = p3d_point_format_get_info (format);
  if (!p3d_structure_get_uint_in_range (s, "channels", 3, 64, &channels))
    return FALSE;
  if (channels != parsed.finfo->channels) {
    P3D_CAPS_REFUSE ("channels = %u but format %s has %u", channels,
        parsed.finfo->name, parsed.finfo->channels);
    return FALSE;
  }
  if (!p3d_structure_get_uint_in_range (s, "max-voxels", 1,
          P3D_VOXELS_MAX_VOXELS, &parsed.max_voxels)
      || !p3d_structure_get_uint_in_range (s, "max-points", 1,
          P3D_VOXELS_MAX_POINTS, &parsed.max_points)
      || !voxels_sizes_valid (parsed.max_voxels, parsed.max_points, channels)
      || !p3d_structure_get_voxel_grid (s, &parsed.grid)
      || !p3d_structure_get_framerate (s, &parsed.fps_n, &parsed.fps_d))
    return FALSE;
  *info = parsed;
  return TRUE;
}

GstCaps *
p3d_voxels_info_to_caps (const P3dVoxelsInfo * info)
{
  GstStructure *s;

  g_return_val_if_fail (info != NULL, NULL);
  g_return_val_if_fail (info->finfo->format != P3D_POINT_FORMAT_UNKNOWN, NULL);
  s = gst_structure_new (P3D_MEDIA_TYPE_VOXELS,
      "format", G_TYPE_STRING, info->finfo->name,
      "channels", G_TYPE_INT, (gint) info->finfo->channels,
      "max-voxels", G_TYPE_INT, (gint) info->max_voxels,
      "max-points", G_TYPE_INT, (gint) info->max_points, NULL);
  p3d_structure_set_voxel_grid (s, &info->grid);
  p3d_structure_set_framerate (s, info->fps_n, info->fps_d);
  return gst_caps_new_full (s, NULL);
}

gboolean
p3d_voxels_info_is_equal (const P3dVoxelsInfo * a, const P3dVoxelsInfo * b)
{
  return a->finfo == b->finfo && a->max_voxels == b->max_voxels
      && a->max_points == b->max_points
      && p3d_voxel_grid_is_equal (&a->grid, &b->grid)
      && a->fps_n == b->fps_n && a->fps_d == b->fps_d;
}

void
p3d_voxels_info_get_layout (const P3dVoxelsInfo * info,
    P3dTensorLayout * layout)
{
  memset (layout, 0, sizeof (*layout));
  layout->n_tensors = P3D_VOXELS_N_TENSORS;
  layout->size[P3D_VOXELS_TENSOR_POINTS] = (gsize) info->max_voxels *
      info->max_points * info->finfo->channels * sizeof (gfloat);
  layout->size[P3D_VOXELS_TENSOR_NUM_POINTS] =
      (gsize) info->max_voxels * sizeof (guint32);
  layout->size[P3D_VOXELS_TENSOR_COORDS] =
      (gsize) info->max_voxels * 4 * sizeof (gint32);
  layout->size[P3D_VOXELS_TENSOR_COUNT] = sizeof (guint32);
}
