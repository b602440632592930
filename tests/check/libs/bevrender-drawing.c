/* bevrender's drawing (gst/bevrender-layers.h over bevrender-canvas.h and bevrender-legend.h),
 * without a pipeline: each input kind's layer against hand-worked pixels
 * (a voxel's cell, a box's outline and heading, a feature plane in both
 * layouts, points coloured by height or intensity), the voxels off the grid
 * counted and not drawn, and the legend rows each layer writes.
 *
 * The view of most cases: 20 x 20 pixels of 0.5 m, the top edge at x = 10 m
 * and the left edge at y = 5 m, so the pixel at column c and row r covers
 * y in (5 - 0.5 (c + 1), 5 - 0.5 c] and x in (10 - 0.5 (r + 1), 10 - 0.5 r].
 * The rows of the canvas are padded, so that a drawing that ignored the
 * stride would show. */
#include <string.h>

#include <gst/check/gstcheck.h>

#include "bevrender-layers.h"
#include "half.h"
#include "p3dtest.h"

#define SIDE 20
#define STRIDE (SIDE * 4 + 12)
#define BACKGROUND P3D_RGB (1, 2, 3)
#define RED P3D_RGB (255, 0, 0)

static const P3dBevView view = { SIDE, SIDE, 0.5, 5.0, 10.0 };

/* A picture of @v cleared to BACKGROUND, without a grid. */
static void
picture_init (P3dBevPicture * picture, const P3dBevView * v)
{
  picture->canvas.width = v->width;
  picture->canvas.height = v->height;
  picture->canvas.stride = STRIDE;
  picture->canvas.pixels = g_malloc0 ((gsize) STRIDE * v->height);
  picture->view = v;
  p3d_bev_picture_begin (picture, BACKGROUND, 0.0);
}

static guint
count_pixels (const P3dBevPicture * picture, P3dColor color)
{
  guint n = 0;
  gint column, row;

  for (row = 0; row < picture->canvas.height; row++)
    for (column = 0; column < picture->canvas.width; column++)
      n += p3d_canvas_get_pixel (&picture->canvas, column, row) == color;
  return n;
}

#define assert_pixel(picture, column, row, expected) G_STMT_START {       \
  P3dColor got_ = p3d_canvas_get_pixel (&(picture)->canvas,       \
      (column), (row));                                                  \
  fail_unless (got_ == (expected), "pixel (%d, %d) is 0x%08x, not 0x%08x",\
      (column), (row), got_, (expected));                                \
} G_STMT_END

#define assert_legend(picture, index, expected) G_STMT_START {            \
  fail_unless ((index) < (picture)->legend.n_entries,                     \
      "legend has %u rows, not %u", (picture)->legend.n_entries,          \
      (index) + 1);                                                       \
  fail_unless_equals_string ((picture)->legend.entries[index].text,       \
      (expected));                                                        \
} G_STMT_END

/* The begin of a picture clears it and draws the grid only when asked. */
GST_START_TEST (test_begin)
{
  P3dBevPicture picture;

  picture_init (&picture, &view);
  fail_unless_equals_int (count_pixels (&picture, BACKGROUND), SIDE * SIDE);
  fail_unless_equals_int (picture.legend.n_entries, 0);

  /* the grid every 2 m: the axis y = 0 lies between columns 9 and 10 */
  p3d_bev_picture_begin (&picture, BACKGROUND, 2.0);
  fail_unless_equals_int (picture.legend.n_entries, 1);
  assert_legend (&picture, 0, "grid every 2 m");
  fail_unless (count_pixels (&picture, P3D_BEV_AXIS_COLOR) > 0);
  fail_unless (count_pixels (&picture, P3D_BEV_GRID_COLOR) > 0);
  g_free (picture.canvas.pixels);
}

GST_END_TEST;

static void
put_voxel (guint8 * coords, guint8 * num_points, guint index, gint32 z,
    gint32 y, gint32 x, guint32 points)
{
  gint32 coord[4] = { 0, z, y, x };

  memcpy (coords + (gsize) index * 16, coord, sizeof (coord));
  if (num_points != NULL)
    memcpy (num_points + (gsize) index * 4, &points, sizeof (points));
}

/* The grid of the voxel cases: 1 m cells from x = 0 and y = -5, 20 x 10,
 * @layers high. */
static void
voxel_cells_init (P3dBevVoxelCells * cells, guint8 * coords,
    guint8 * num_points, guint32 count, guint layers)
{
  cells->coords = coords;
  cells->num_points = num_points;
  cells->count = count;
  cells->columns = 20;
  cells->rows = 10;
  cells->layers = layers;
  cells->x0 = 0.0;
  cells->y0 = -5.0;
  cells->x_step = 1.0;
  cells->y_step = 1.0;
}

/* Voxel (y 2, x 3) covers x in [3, 4), y in [-3, -2): the pixel centres
 * inside are columns 14 and 15 (y -2.25, -2.75), rows 12 and 13 (x 3.75,
 * 3.25). Voxels off the grid in x, y or z are counted and not drawn; a
 * voxel of no points is neither. */
GST_START_TEST (test_voxels)
{
  guint8 coords[6 * 16], num_points[6 * 4];
  P3dBevVoxelCells cells;
  P3dBevPicture picture;
  guint outside;

  put_voxel (coords, num_points, 0, 0, 2, 3, 4);
  put_voxel (coords, num_points, 1, 0, 2, 20, 1);       /* x = columns */
  put_voxel (coords, num_points, 2, 0, -1, 3, 1);       /* y < 0 */
  put_voxel (coords, num_points, 3, 1, 2, 3, 1);        /* z = layers */
  put_voxel (coords, num_points, 4, 0, 7, 7, 0);        /* empty */
  put_voxel (coords, num_points, 5, 0, 10, -1, 2);      /* both off */
  voxel_cells_init (&cells, coords, num_points, 6, 1);

  picture_init (&picture, &view);
  outside = p3d_bev_picture_draw_voxels (&picture, &cells, FALSE);
  fail_unless_equals_int (outside, 4);
  fail_unless_equals_int (count_pixels (&picture, P3D_BEV_OCCUPANCY_COLOR), 4);
  assert_pixel (&picture, 14, 12, P3D_BEV_OCCUPANCY_COLOR);
  assert_pixel (&picture, 15, 12, P3D_BEV_OCCUPANCY_COLOR);
  assert_pixel (&picture, 14, 13, P3D_BEV_OCCUPANCY_COLOR);
  assert_pixel (&picture, 15, 13, P3D_BEV_OCCUPANCY_COLOR);
  /* one grid z cell: pillars */
  fail_unless_equals_int (picture.legend.n_entries, 1);
  assert_legend (&picture, 0, "pillars");

  /* only the first voxel: the count bounds what is read */
  p3d_bev_picture_begin (&picture, BACKGROUND, 0.0);
  cells.count = 1;
  fail_unless_equals_int (p3d_bev_picture_draw_voxels (&picture, &cells,
          FALSE), 0);
  fail_unless_equals_int (count_pixels (&picture, P3D_BEV_OCCUPANCY_COLOR), 4);

  /* two z cells: voxel 3 is in the grid now, on the same ground cell */
  p3d_bev_picture_begin (&picture, BACKGROUND, 0.0);
  voxel_cells_init (&cells, coords, num_points, 6, 2);
  fail_unless_equals_int (p3d_bev_picture_draw_voxels (&picture, &cells,
          FALSE), 3);
  fail_unless_equals_int (count_pixels (&picture, P3D_BEV_OCCUPANCY_COLOR), 4);
  assert_legend (&picture, 0, "voxels (any z)");

  /* pillar features have no point counts: voxel 4 is drawn, at x [7, 8),
   * y [2, 3): columns 4, 5 and rows 4, 5 */
  p3d_bev_picture_begin (&picture, BACKGROUND, 0.0);
  voxel_cells_init (&cells, coords, NULL, 6, 2);
  fail_unless_equals_int (p3d_bev_picture_draw_voxels (&picture, &cells,
          TRUE), 3);
  fail_unless_equals_int (count_pixels (&picture, P3D_BEV_OCCUPANCY_COLOR), 8);
  assert_pixel (&picture, 4, 4, P3D_BEV_OCCUPANCY_COLOR);
  assert_pixel (&picture, 5, 5, P3D_BEV_OCCUPANCY_COLOR);
  assert_legend (&picture, 0, "pillars");
  g_free (picture.canvas.pixels);
}

GST_END_TEST;

static void
put_box (guint8 * records, guint index, gfloat x, gfloat y, gfloat dx,
    gfloat dy, gfloat score, gint32 label)
{
  P3dcBox3d box = { x, y, -1.0f, dx, dy, 1.5f, 0.0f, score, label };

  memcpy (records + (gsize) index * P3DC_BOX3D_SIZE, &box, sizeof (box));
}

/* A box at (5, 0), 4 m along x and 2 m along y, yaw 0, in a view shifted
 * by a quarter metre so that its corners (7, 1), (7, -1), (3, -1), (3, 1)
 * fall on the centres of pixels (8, 6), (12, 6), (12, 14), (8, 14): its
 * outline is that 5 x 9 pixel rectangle's border (24 pixels), and the
 * heading from the centre pixel (10, 10) to the front edge's middle
 * (10, 6) adds rows 7 to 10 of column 10. */
GST_START_TEST (test_box_outline)
{
  static const P3dBevView shifted = { SIDE, SIDE, 0.5, 5.25, 10.25 };
  P3dBevBoxStyle style = { RED, 1, FALSE };
  guint8 records[P3DC_BOX3D_SIZE];
  P3dBevPicture picture;
  gint column, row;

  put_box (records, 0, 5.0f, 0.0f, 4.0f, 2.0f, 0.9f, 3);
  picture_init (&picture, &shifted);
  p3d_bev_picture_draw_boxes (&picture, records, 1, &style, "truth");
  assert_pixel (&picture, 8, 6, RED);
  assert_pixel (&picture, 12, 6, RED);
  assert_pixel (&picture, 12, 14, RED);
  assert_pixel (&picture, 8, 14, RED);
  /* just outside the corners, and inside the box off the heading */
  assert_pixel (&picture, 7, 6, BACKGROUND);
  assert_pixel (&picture, 8, 5, BACKGROUND);
  assert_pixel (&picture, 13, 14, BACKGROUND);
  assert_pixel (&picture, 12, 15, BACKGROUND);
  assert_pixel (&picture, 9, 12, BACKGROUND);
  for (row = 6; row <= 10; row++)
    assert_pixel (&picture, 10, row, RED);
  assert_pixel (&picture, 10, 11, BACKGROUND);
  for (column = 8; column <= 12; column++) {
    assert_pixel (&picture, column, 6, RED);
    assert_pixel (&picture, column, 14, RED);
  }
  for (row = 6; row <= 14; row++) {
    assert_pixel (&picture, 8, row, RED);
    assert_pixel (&picture, 12, row, RED);
  }
  fail_unless_equals_int (count_pixels (&picture, RED), 24 + 4);
  /* one colour: the legend names the set */
  fail_unless_equals_int (picture.legend.n_entries, 1);
  assert_legend (&picture, 0, "truth");
  fail_unless_equals_int (picture.legend.entries[0].color, RED);

  /* no box of one colour: no legend row */
  p3d_bev_picture_begin (&picture, BACKGROUND, 0.0);
  p3d_bev_picture_draw_boxes (&picture, records, 0, &style, "truth");
  fail_unless_equals_int (count_pixels (&picture, BACKGROUND), SIDE * SIDE);
  fail_unless_equals_int (picture.legend.n_entries, 0);
  g_free (picture.canvas.pixels);
}

GST_END_TEST;

/* Boxes in the colours of their labels: the legend lists each label once,
 * in the order first drawn. */
GST_START_TEST (test_box_labels)
{
  static const P3dBevView shifted = { SIDE, SIDE, 0.5, 5.25, 10.25 };
  static const gchar *const names[] = { "car", "pedestrian", "cyclist",
    NULL
  };
  P3dBevBoxStyle style = { 0, 1, FALSE };
  guint8 records[3 * P3DC_BOX3D_SIZE];
  P3dBevPicture picture;

  put_box (records, 0, 5.0f, 0.0f, 4.0f, 2.0f, 0.9f, 2);
  put_box (records, 1, 8.0f, 3.0f, 1.0f, 1.0f, 0.8f, 5);
  put_box (records, 2, 5.0f, 0.0f, 4.0f, 2.0f, 0.7f, 2);
  picture_init (&picture, &shifted);
  p3d_bev_picture_draw_boxes (&picture, records, 3, &style, "unused");
  assert_pixel (&picture, 8, 14, p3d_color_for_label (2));
  /* box 1's corner (8.5, 3.5): u (5.25 - 3.5) / 0.5, v (10.25 - 8.5) / 0.5 */
  assert_pixel (&picture, 3, 3, p3d_color_for_label (5));
  fail_unless_equals_int (picture.legend.n_entries, 2);
  assert_legend (&picture, 0, "boxes label 2");
  assert_legend (&picture, 1, "boxes label 5");
  g_free (picture.canvas.pixels);

  /* with class names (issue 25.4): the name of a label that has one */
  style.class_names = names;
  picture_init (&picture, &shifted);
  p3d_bev_picture_draw_boxes (&picture, records, 3, &style, "unused");
  fail_unless_equals_int (picture.legend.n_entries, 2);
  assert_legend (&picture, 0, "boxes: cyclist");
  assert_legend (&picture, 1, "boxes label 5");
  g_free (picture.canvas.pixels);
}

GST_END_TEST;

static void
put_point (guint8 * data, guint index, guint channels, const gfloat * values)
{
  memcpy (data + (gsize) index * channels * 4, values, channels * 4);
}

/* A point at x 6.2, y 1.2 lands on column floor ((5 - 1.2) / 0.5) = 7,
 * row floor ((10 - 6.2) / 0.5) = 7. Coloured by height 0 in [-3, 1]:
 * rainbow 0.75; by intensity 0.25 in [0, 1]: rainbow 0.25; points without
 * an intensity fall back to height and say so. */
GST_START_TEST (test_points)
{
  static const gfloat first[4] = { 6.2f, 1.2f, 0.0f, 0.25f };
  static const gfloat second[4] = { 1.2f, -3.3f, 1.0f, 1.0f };
  P3dColor at_height = p3d_bev_color_map (P3D_BEV_COLOR_MAP_RAINBOW, 0.75);
  P3dColor at_intensity = p3d_bev_color_map (P3D_BEV_COLOR_MAP_RAINBOW, 0.25);
  /* two points and a partial third */
  guint8 data[2 * 16 + 8];
  P3dBevPointsLayer layer = { data, sizeof (data), 16, 3, FALSE,
    {-3.0, 1.0}, {0.0, 1.0}, 1
  };
  P3dBevPicture picture;

  memset (data, 0, sizeof (data));
  put_point (data, 0, 4, first);
  put_point (data, 1, 4, second);
  picture_init (&picture, &view);
  fail_unless (p3d_bev_picture_draw_points (&picture, &layer));
  assert_pixel (&picture, 7, 7, at_height);
  /* the second: column floor (16.6), row floor (17.6), height 1: the end */
  assert_pixel (&picture, 16, 17,
      p3d_bev_color_map (P3D_BEV_COLOR_MAP_RAINBOW, 1.0));
  fail_unless_equals_int (count_pixels (&picture, BACKGROUND), SIDE * SIDE - 2);
  assert_legend (&picture, 0, "points: height -3 to 1 m");

  p3d_bev_picture_begin (&picture, BACKGROUND, 0.0);
  layer.by_intensity = TRUE;
  fail_unless (p3d_bev_picture_draw_points (&picture, &layer));
  assert_pixel (&picture, 7, 7, at_intensity);
  assert_legend (&picture, 0, "points: intensity 0 to 1");

  /* xyz: no intensity to colour by */
  p3d_bev_picture_begin (&picture, BACKGROUND, 0.0);
  put_point (data, 0, 3, first);
  layer.stride = 12;
  layer.size = 12;
  layer.intensity_channel = -1;
  fail_if (p3d_bev_picture_draw_points (&picture, &layer));
  assert_pixel (&picture, 7, 7, at_height);
  fail_unless_equals_int (count_pixels (&picture, BACKGROUND), SIDE * SIDE - 1);
  assert_legend (&picture, 0, "points: height -3 to 1 m");

  /* a square of 3 pixels centred on the point's */
  p3d_bev_picture_begin (&picture, BACKGROUND, 0.0);
  layer.point_size = 3;
  p3d_bev_picture_draw_points (&picture, &layer);
  fail_unless_equals_int (count_pixels (&picture, at_height), 9);
  assert_pixel (&picture, 6, 6, at_height);
  assert_pixel (&picture, 8, 8, at_height);
  g_free (picture.canvas.pixels);
}

GST_END_TEST;

/* A plane of 2 cells over x [0, 10), y [-5, 5), 2 channels: cell 0 (3, 4)
 * of norm 5, cell 1 (0, 2.5) of norm 2.5, so heat 1 and heat 0.5. Layout
 * yx (width along x): cell 0 is x [0, 5), rows 10 to 19, and cell 1 rows
 * 0 to 9. Layout xy (width along y): cell 0 is y [-5, 0), columns 10 to
 * 19. */
GST_START_TEST (test_features)
{
  static const gfloat values[4] = { 3.0f, 0.0f, 4.0f, 2.5f };
  P3dColor full = p3d_bev_color_map (P3D_BEV_COLOR_MAP_HEAT, 1.0);
  P3dColor half_colour = p3d_bev_color_map (P3D_BEV_COLOR_MAP_HEAT, 0.5);
  guint16 halves[4];
  gfloat magnitudes[2];
  P3dBevFeaturesLayer layer = { (const guint8 *) values, 2, 2, 1, FALSE,
    FALSE, {0.0, -5.0, 10.0, 5.0}, magnitudes
  };
  P3dBevPicture picture;
  guint variant, i;

  for (i = 0; i < 4; i++)
    halves[i] = p3dc_float_to_half (values[i]);
  picture_init (&picture, &view);
  for (variant = 0; variant < 4; variant++) {
    p3d_bev_picture_begin (&picture, BACKGROUND, 0.0);
    layer.half = variant & 1;
    layer.data = layer.half ? (const guint8 *) halves : (const guint8 *) values;
    layer.rows_along_x = (variant & 2) != 0;
    p3d_bev_picture_draw_features (&picture, &layer);
    fail_unless_equals_float (magnitudes[0], 5.0f);
    fail_unless_equals_float (magnitudes[1], 2.5f);
    fail_unless_equals_int (count_pixels (&picture, full), SIDE * SIDE / 2);
    fail_unless_equals_int (count_pixels (&picture, half_colour),
        SIDE * SIDE / 2);
    if (layer.rows_along_x) {
      assert_pixel (&picture, 19, 0, full);
      assert_pixel (&picture, 10, 19, full);
      assert_pixel (&picture, 9, 19, half_colour);
    } else {
      assert_pixel (&picture, 0, 19, full);
      assert_pixel (&picture, 19, 10, full);
      assert_pixel (&picture, 19, 9, half_colour);
    }
    assert_legend (&picture, 0, "features: norm 0 to 5");
  }
  g_free (picture.canvas.pixels);
}

GST_END_TEST;

/* Cells of zero or non-finite norm are not drawn, and the legend's top is
 * the largest finite norm. */
GST_START_TEST (test_features_not_finite)
{
  gfloat values[3] = { 0.0f, NAN, 1.5f };
  gfloat magnitudes[3];
  P3dBevFeaturesLayer layer = { (const guint8 *) values, 1, 3, 1, FALSE,
    FALSE, {0.0, -5.0, 7.5, 5.0}, magnitudes
  };
  P3dBevPicture picture;

  picture_init (&picture, &view);
  p3d_bev_picture_draw_features (&picture, &layer);
  /* cell 2 is x [5, 7.5): rows 5 to 9 */
  fail_unless_equals_int (count_pixels (&picture,
          p3d_bev_color_map (P3D_BEV_COLOR_MAP_HEAT, 1.0)), 5 * SIDE);
  assert_pixel (&picture, 0, 5, p3d_bev_color_map (P3D_BEV_COLOR_MAP_HEAT,
          1.0));
  assert_pixel (&picture, 0, 4, BACKGROUND);
  assert_pixel (&picture, 0, 10, BACKGROUND);
  assert_pixel (&picture, 0, 19, BACKGROUND);
  assert_legend (&picture, 0, "features: norm 0 to 1.5");
  g_free (picture.canvas.pixels);
}

GST_END_TEST;

/* The annotations go on top: the sensor (the origin, here at column 10,
 * row 20, just below the image, so not drawn) and the legend panel. */
GST_START_TEST (test_finish)
{
  static const P3dBevView centred = { SIDE * 4, SIDE * 4, 0.5, 20.0, 20.0 };
  P3dBevPicture picture;
  guint8 *pixels;

  picture_init (&picture, &view);
  p3d_bev_picture_finish (&picture);
  fail_unless_equals_int (picture.legend.n_entries, 0);
  fail_unless (count_pixels (&picture, P3D_BEV_PANEL_COLOR) > 0);
  g_free (picture.canvas.pixels);

  /* an 80 x 80 image around the sensor: its arrow and its legend row */
  pixels = g_malloc0 ((gsize) centred.width * 4 * centred.height);
  picture.canvas.width = centred.width;
  picture.canvas.height = centred.height;
  picture.canvas.stride = (gsize) centred.width * 4;
  picture.canvas.pixels = pixels;
  picture.view = &centred;
  p3d_bev_picture_begin (&picture, BACKGROUND, 0.0);
  p3d_bev_picture_finish (&picture);
  assert_legend (&picture, 0, "sensor: arrow to +x");
  fail_unless (count_pixels (&picture, P3D_BEV_ANNOTATION_COLOR) > 0);
  g_free (pixels);
}

GST_END_TEST;

static Suite *
bevrender_drawing_suite (void)
{
  Suite *s = suite_create ("bevrender_drawing");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_begin);
  tcase_add_test (tc, test_voxels);
  tcase_add_test (tc, test_box_outline);
  tcase_add_test (tc, test_box_labels);
  tcase_add_test (tc, test_points);
  tcase_add_test (tc, test_features);
  tcase_add_test (tc, test_features_not_finite);
  tcase_add_test (tc, test_finish);
  return s;
}

P3D_CHECK_MAIN (bevrender_drawing);
