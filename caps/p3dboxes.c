/* application/x-boxes3d and -2d <-> their info structs. The two media
 * types differ only in their name and record size, so one implementation
 * serves both through the "boxes_*" helpers. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dboxes.h"
#include "p3dcapsfields.h"

#define GST_CAT_DEFAULT p3d_caps_debug

static gboolean
boxes_from_caps (const GstCaps * caps, const gchar * media_type,
    guint * max_boxes, gint * fps_n, gint * fps_d)
{
  const GstStructure *s = p3d_caps_get_fixed_structure (caps, media_type);
  guint parsed_max;
  gint parsed_n, parsed_d;

  if (s == NULL
      || !p3d_structure_get_uint_in_range (s, "max-boxes", 1,
          P3D_BOXES_MAX_BOXES, &parsed_max)
      || !p3d_structure_get_framerate (s, &parsed_n, &parsed_d))
    return FALSE;
  *max_boxes = parsed_max;
  *fps_n = parsed_n;
  *fps_d = parsed_d;
  return TRUE;
}

static GstCaps *
boxes_to_caps (const gchar * media_type, guint max_boxes, gint fps_n,
    gint fps_d)
{
  GstStructure *s = gst_structure_new (media_type, "max-boxes", G_TYPE_INT,
      (gint) max_boxes, NULL);

  p3d_structure_set_framerate (s, fps_n, fps_d);
  return gst_caps_new_full (s, NULL);
}

static void
boxes_get_layout (guint max_boxes, gsize record_size, P3dTensorLayout * layout)
{
  memset (layout, 0, sizeof (*layout));
  layout->n_tensors = P3D_BOXES_N_TENSORS;
  layout->size[P3D_BOXES_TENSOR_RECORDS] = (gsize) max_boxes *record_size;
  layout->size[P3D_BOXES_TENSOR_COUNT] = sizeof (guint32);
}

void
p3d_boxes3d_info_init (P3dBoxes3dInfo * info)
{
  g_return_if_fail (info != NULL);
  memset (info, 0, sizeof (*info));
  info->fps_d = 1;
}

gboolean
p3d_boxes3d_info_from_caps (P3dBoxes3dInfo * info, const GstCaps * caps)
{
  const GstStructure *s;
  gboolean velocity = FALSE;

  g_return_val_if_fail (info != NULL, FALSE);
  if (!boxes_from_caps (caps, P3D_MEDIA_TYPE_BOXES3D, &info->max_boxes,
          &info->fps_n, &info->fps_d))
    return FALSE;
  /* absent means false, so that caps and files from before the field
   * describe what they always did */
  s = gst_caps_get_structure (caps, 0);
  if (gst_structure_has_field (s, "velocity")
      && !gst_structure_get_boolean (s, "velocity", &velocity)) {
    GST_DEBUG ("velocity is not a boolean in %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  info->velocity = velocity;
  return TRUE;
}

GstCaps *
p3d_boxes3d_info_to_caps (const P3dBoxes3dInfo * info)
{
  GstCaps *caps;

  g_return_val_if_fail (info != NULL && info->max_boxes > 0, NULL);
  caps = boxes_to_caps (P3D_MEDIA_TYPE_BOXES3D, info->max_boxes, info->fps_n,
      info->fps_d);
  if (info->velocity)
    gst_caps_set_simple (caps, "velocity", G_TYPE_BOOLEAN, TRUE, NULL);
  return caps;
}

gboolean
p3d_boxes3d_info_is_equal (const P3dBoxes3dInfo * a, const P3dBoxes3dInfo * b)
{
  return a->max_boxes == b->max_boxes && a->fps_n == b->fps_n
      && a->fps_d == b->fps_d && !a->velocity == !b->velocity;
}

void
p3d_boxes3d_info_get_layout (const P3dBoxes3dInfo * info,
    P3dTensorLayout * layout)
{
  boxes_get_layout (info->max_boxes, P3D_BOX3D_RECORD_SIZE, layout);
  if (info->velocity) {
    layout->n_tensors = P3D_BOXES3D_N_TENSORS_VELOCITY;
    layout->size[P3D_BOXES_TENSOR_VELOCITY] = (gsize) info->max_boxes *
        P3D_BOX3D_VELOCITY_SIZE;
  }
}

void
p3d_boxes2d_info_init (P3dBoxes2dInfo * info)
{
  g_return_if_fail (info != NULL);
  memset (info, 0, sizeof (*info));
  info->fps_d = 1;
}

gboolean
p3d_boxes2d_info_from_caps (P3dBoxes2dInfo * info, const GstCaps * caps)
{
  g_return_val_if_fail (info != NULL, FALSE);
  return boxes_from_caps (caps, P3D_MEDIA_TYPE_BOXES2D, &info->max_boxes,
      &info->fps_n, &info->fps_d);
}

GstCaps *
p3d_boxes2d_info_to_caps (const P3dBoxes2dInfo * info)
{
  g_return_val_if_fail (info != NULL && info->max_boxes > 0, NULL);
  return boxes_to_caps (P3D_MEDIA_TYPE_BOXES2D, info->max_boxes, info->fps_n,
      info->fps_d);
}

gboolean
p3d_boxes2d_info_is_equal (const P3dBoxes2dInfo * a, const P3dBoxes2dInfo * b)
{
  return a->max_boxes == b->max_boxes && a->fps_n == b->fps_n
      && a->fps_d == b->fps_d;
}

void
p3d_boxes2d_info_get_layout (const P3dBoxes2dInfo * info,
    P3dTensorLayout * layout)
{
  boxes_get_layout (info->max_boxes, P3D_BOX2D_RECORD_SIZE, layout);
}
