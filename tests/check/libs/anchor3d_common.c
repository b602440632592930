/* The anchor-head decode tests' shared helpers (anchor3d_common.h). */
#include <math.h>
#include <string.h>

#include "anchor3d_common.h"
#include "half.h"

static void
kitti_set (P3dcAnchor3dSet * set, gdouble dx, gdouble dy, gdouble dz,
    gdouble bottom, P3dcAnchor3dPlacement placement)
{
  memset (set, 0, sizeof (*set));
  set->x_range[0] = 0.0;
  set->x_range[1] = 69.12;
  set->y_range[0] = -39.68;
  set->y_range[1] = 39.68;
  set->bottom = bottom;
  set->n_sizes = 1;
  set->sizes[0][0] = dx;
  set->sizes[0][1] = dy;
  set->sizes[0][2] = dz;
  set->n_rotations = 2;
  set->rotations[0] = 0.0;
  set->rotations[1] = 1.57;
  set->placement = placement;
}

guint
p3d_test_anchor3d_openpcdet_kitti (P3dcAnchor3dSet * sets)
{
  kitti_set (&sets[0], 3.9, 1.6, 1.56, -1.78, P3DC_ANCHOR3D_SPAN);
  kitti_set (&sets[1], 0.8, 0.6, 1.73, -0.6, P3DC_ANCHOR3D_SPAN);
  kitti_set (&sets[2], 1.76, 0.6, 1.73, -0.6, P3DC_ANCHOR3D_SPAN);
  return 3;
}

guint
p3d_test_anchor3d_mmdet3d_kitti (P3dcAnchor3dSet * sets)
{
  kitti_set (&sets[0], 0.8, 0.6, 1.73, -0.6, P3DC_ANCHOR3D_CENTERS);
  kitti_set (&sets[1], 1.76, 0.6, 1.73, -0.6, P3DC_ANCHOR3D_CENTERS);
  kitti_set (&sets[2], 3.9, 1.6, 1.56, -1.78, P3DC_ANCHOR3D_CENTERS);
  return 3;
}

void
p3d_test_anchor3d_openpcdet_params (P3dcAnchor3dParams * p)
{
  memset (p, 0, sizeof (*p));
  p->rules = P3DC_ANCHOR3D_OPENPCDET;
  p->num_classes = 3;
  p->code_size = 7;
  p->dir_bins = 2;
  p->dir_offset = 0.78539f;
  p->dir_limit_offset = 0.0f;
  p->score_threshold = 0.1f;
  p->per_class = 0;
  p->nms = P3DC_ANCHOR3D_NMS_ROTATED_MMCV;
  p->nms_threshold = 0.01f;
  p->pre_max = 4096;
  p->post_max = 500;
}

void
p3d_test_anchor3d_mmdet3d_params (P3dcAnchor3dParams * p)
{
  memset (p, 0, sizeof (*p));
  p->rules = P3DC_ANCHOR3D_MMDET3D;
  p->num_classes = 3;
  p->code_size = 7;
  p->dir_bins = 2;
  p->dir_offset = (gfloat) - G_PI_2;
  p->dir_limit_offset = 0.0f;
  p->score_threshold = 0.1f;
  p->nms = P3DC_ANCHOR3D_NMS_ROTATED;
  p->nms_threshold = 0.01f;
  p->pre_max = 100;
  p->post_max = 50;
}

guint32
p3d_test_head_channels (const P3dTestHead * head)
{
  return head->anchors * (head->classes + head->code_size + head->dir_bins);
}

void
p3d_test_head_init (P3dTestHead * head, const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table)
{
  head->anchors = table->n_anchors;
  head->classes = params->num_classes;
  head->code_size = params->code_size;
  head->dir_bins = params->dir_bins;
  head->height = table->height;
  head->width = table->width;
  head->data = g_new0 (gfloat, (gsize) p3d_test_head_channels (head)
      * head->height * head->width);
}

void
p3d_test_head_clear (P3dTestHead * head)
{
  g_free (head->data);
  head->data = NULL;
}

static gfloat *
head_at (P3dTestHead * head, guint32 channel, guint32 y, guint32 x)
{
  return head->data + ((gsize) channel * head->height + y) * head->width + x;
}

gfloat *
p3d_test_head_cls (P3dTestHead * head, guint32 k, guint32 c, guint32 y,
    guint32 x)
{
  return head_at (head, k * head->classes + c, y, x);
}

gfloat *
p3d_test_head_box (P3dTestHead * head, guint32 k, guint32 j, guint32 y,
    guint32 x)
{
  return head_at (head, head->anchors * head->classes + k * head->code_size
      + j, y, x);
}

gfloat *
p3d_test_head_dir (P3dTestHead * head, guint32 k, guint32 b, guint32 y,
    guint32 x)
{
  return head_at (head, head->anchors * (head->classes + head->code_size)
      + k * head->dir_bins + b, y, x);
}

void
p3d_test_head_maps (const P3dTestHead * head, const void *base,
    P3dcAnchor3dMaps * maps)
{
  gsize plane = (gsize) head->height * head->width;
  P3dcMapView view = { base, 0, plane, head->width, 1 };

  memset (maps, 0, sizeof (*maps));
  maps->cls = view;
  maps->box = view;
  maps->box.data = (const gfloat *) base
      + plane * head->anchors * head->classes;
  if (head->dir_bins > 0) {
    maps->dir = view;
    maps->dir.data = (const gfloat *) base
        + plane * head->anchors * (head->classes + head->code_size);
  }
}

void
p3d_test_head_maps_nhwc (const P3dTestHead * head, const void *base,
    guint32 stride, P3dcAnchor3dMaps * maps)
{
  P3dcMapView view = { base, 1, 1, (gsize) head->width * stride, stride };

  memset (maps, 0, sizeof (*maps));
  maps->cls = view;
  maps->box = view;
  maps->box.data = (const guint16 *) base + head->anchors * head->classes;
  if (head->dir_bins > 0) {
    maps->dir = view;
    maps->dir.data = (const guint16 *) base
        + head->anchors * (head->classes + head->code_size);
  }
}

guint16 *
p3d_test_head_to_nhwc (const P3dTestHead * head, guint32 stride)
{
  guint32 channels = p3d_test_head_channels (head), c;
  gsize plane = (gsize) head->height * head->width, i;
  guint16 *out = g_new0 (guint16, plane * stride);

  for (c = 0; c < channels; c++)
    for (i = 0; i < plane; i++)
      out[i * stride + c] = p3dc_float_to_half (head->data[c * plane + i]);
  return out;
}

static gfloat
f16 (gfloat v)
{
  return p3dc_half_to_float (p3dc_float_to_half (v));
}

void
p3d_test_head_fill (P3dTestHead * head, P3dTestRng * rng, gdouble hit_rate,
    gboolean ties)
{
  /* a logit above -2.197 (sigmoid 0.1) with probability hit_rate: uniform
   * over [-2.197 - w (1 - r) / r, -2.197 + w] hits r of the time */
  const gfloat width = 3.0f;
  gfloat low = -2.1972246f - width * (gfloat) ((1.0 - hit_rate) / hit_rate);
  guint32 k, c, j, y, x;

  for (y = 0; y < head->height; y++) {
    for (x = 0; x < head->width; x++) {
      for (k = 0; k < head->anchors; k++) {
        for (c = 0; c < head->classes; c++)
          *p3d_test_head_cls (head, k, c, y, x) = ties
              ? (p3d_test_rng_below (rng, 1000) < hit_rate * 1000 ? 0.5f
              * (gfloat) p3d_test_rng_below (rng, 3) - 1.5f : -8.0f)
              : f16 (p3d_test_rng_uniform (rng, low, -2.1972246f + width));
        for (j = 0; j < head->code_size; j++) {
          /* x, y, z in cells of about a metre; sizes within e^0.3 */
          gfloat range = j < 3 ? 0.6f : j < 6 ? 0.3f : j == 6 ? 0.8f : 2.0f;

          *p3d_test_head_box (head, k, j, y, x) =
              f16 (p3d_test_rng_uniform (rng, -range, range));
        }
        for (j = 0; j < head->dir_bins; j++)
          *p3d_test_head_dir (head, k, j, y, x) = ties
              ? (gfloat) p3d_test_rng_below (rng, 2)
              : f16 (p3d_test_rng_uniform (rng, -2.0f, 2.0f));
      }
    }
  }
}
