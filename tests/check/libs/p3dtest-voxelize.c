/* Shared by the voxelize tests; see p3dtest-voxelize.h. */
#include <string.h>

#include "p3dtest-voxelize.h"

void
voxelize_test_params (P3dcVoxelizeParams * params, const gdouble size[3],
    const gdouble min[3], const guint cells[3], guint channels,
    guint max_points, guint max_voxels)
{
  gdouble range[6];
  guint a;

  for (a = 0; a < 3; a++) {
    range[a] = min[a];
    range[3 + a] = min[a] + size[a] * cells[a];
  }
  fail_unless_equals_int (p3dc_voxelize_params_init (params, size, range,
          channels, max_points, max_voxels), P3DC_OK);
  for (a = 0; a < 3; a++)
    fail_unless_equals_int (params->grid[a], cells[a]);
}

void
voxelize_test_set_point (gfloat * points, gsize i, guint channels, gfloat x,
    gfloat y, gfloat z, gfloat extra)
{
  guint c;

  points[i * channels + 0] = x;
  points[i * channels + 1] = y;
  points[i * channels + 2] = z;
  for (c = 3; c < channels; c++)
    points[i * channels + c] = extra + c;
}

gsize
voxelize_test_voxel_floats (const P3dcVoxelizeParams * params)
{
  return (gsize) params->max_voxels * params->max_points * params->channels;
}

void
voxelize_test_result_init (VoxelizeTestResult * r,
    const P3dcVoxelizeParams * params)
{
  gsize rows = params->max_voxels;

  r->params = *params;
  r->voxels = g_new (gfloat, voxelize_test_voxel_floats (params));
  r->num_points = g_new (guint32, rows);
  r->coords = g_new (gint32, rows * 4);
  /* Poison: the function under test must write every byte. */
  memset (r->voxels, 0xff, voxelize_test_voxel_floats (params) * 4);
  memset (r->num_points, 0xff, rows * 4);
  memset (r->coords, 0xff, rows * 16);
  memset (&r->count, 0xff, sizeof (r->count));
  memset (&r->stats, 0xff, sizeof (r->stats));
  r->out.voxels = r->voxels;
  r->out.num_points = r->num_points;
  r->out.coords = r->coords;
  r->out.count = &r->count;
  r->out.stats = &r->stats;
}

void
voxelize_test_result_clear (VoxelizeTestResult * r)
{
  g_free (r->voxels);
  g_free (r->num_points);
  g_free (r->coords);
}

/* The first index where @n words differ, or @n. */
static gsize
first_difference (const guint32 * a, const guint32 * b, gsize n)
{
  gsize i;

  for (i = 0; i < n && a[i] == b[i]; i++);
  return i;
}

/* Whole tensors are compared with memcmp, and only a difference is looked
 * for word by word: one check assertion per word (each one a write to
 * check's message file, with CK_FORK=no too) made the tests with the
 * largest outputs run for minutes. */
void
voxelize_test_assert_same (const VoxelizeTestResult * expected,
    const VoxelizeTestResult * actual, const gchar * what)
{
  const P3dcVoxelizeParams *p = &expected->params;
  gsize row = (gsize) p->max_points * p->channels, i;
  gsize words = p->max_voxels * row;
  const guint32 *e_words = (const guint32 *) expected->voxels;
  const guint32 *a_words = (const guint32 *) actual->voxels;

  fail_unless (expected->count == actual->count, "%s: count %u, expected %u",
      what, actual->count, expected->count);
#define CHECK_STAT(field) \
  fail_unless (expected->stats.field == actual->stats.field, \
      "%s: stats." #field " %u, expected %u", what, actual->stats.field, \
      expected->stats.field)
  CHECK_STAT (points_in);
  CHECK_STAT (points_nonfinite);
  CHECK_STAT (points_out_of_range);
  CHECK_STAT (points_over_max_points);
  CHECK_STAT (points_over_max_voxels);
  CHECK_STAT (voxels);
  CHECK_STAT (voxels_dropped);
#undef CHECK_STAT
  if (memcmp (expected->num_points, actual->num_points,
          (gsize) p->max_voxels * 4) != 0) {
    i = first_difference (expected->num_points, actual->num_points,
        p->max_voxels);
    fail ("%s: num_points[%" G_GSIZE_FORMAT "] %u, expected %u", what, i,
        actual->num_points[i], expected->num_points[i]);
  }
  if (memcmp (expected->coords, actual->coords,
          (gsize) p->max_voxels * 16) != 0) {
    i = first_difference ((const guint32 *) expected->coords,
        (const guint32 *) actual->coords, (gsize) p->max_voxels * 4);
    fail ("%s: coords[%" G_GSIZE_FORMAT "][%" G_GSIZE_FORMAT "] %d, "
        "expected %d", what, i / 4, i % 4, actual->coords[i],
        expected->coords[i]);
  }
  if (memcmp (e_words, a_words, words * 4) != 0) {
    i = first_difference (e_words, a_words, words);
    fail ("%s: voxels[%" G_GSIZE_FORMAT "][%" G_GSIZE_FORMAT "][%"
        G_GSIZE_FORMAT "] bits 0x%08x (%g), expected 0x%08x (%g)", what,
        i / row, (i % row) / p->channels, i % p->channels, a_words[i],
        actual->voxels[i], e_words[i], expected->voxels[i]);
  }
}
