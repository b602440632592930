/* gst-perception: application/x-boxes3d and application/x-boxes2d.
 *
 * Caps fields: max-boxes (the capacity of the records tensor); optional
 * framerate; application/x-boxes3d also an optional boolean velocity
 * (false when absent).
 *
 * Tensors, in this order:
 *   0 records  [max-boxes] records, valid ones first, zeros after
 *   1 count    [1] uint32, the number of valid records
 *   2 velocity [max-boxes][2] float32, vx and vy of each record in m/s
 *              (zeros after the count); only with velocity=true
 *
 * A 3D box record is 36 bytes: x, y, z (centre), dx, dy, dz (full sizes),
 * yaw (radians, about z, counter-clockwise from +x), score as float32 and
 * label as int32, in the LiDAR frame. A 2D box record is 24 bytes: x1, y1,
 * x2, y2, score as float32 and label as int32.
 */
#ifndef __P3D_BOXES_H__
#define __P3D_BOXES_H__

#include <gst/gst.h>

#include "p3dtensor.h"

G_BEGIN_DECLS

#define P3D_MEDIA_TYPE_BOXES3D "application/x-boxes3d"
#define P3D_MEDIA_TYPE_BOXES2D "application/x-boxes2d"

#define P3D_BOX3D_RECORD_SIZE 36
#define P3D_BOX2D_RECORD_SIZE 24
/* the velocity tensor's bytes per record: vx, vy as float32 */
#define P3D_BOX3D_VELOCITY_SIZE 8
#define P3D_BOXES_MAX_BOXES (1u << 20)

enum
{
  P3D_BOXES_TENSOR_RECORDS = 0,
  P3D_BOXES_TENSOR_COUNT = 1,
  P3D_BOXES_N_TENSORS = 2,
  /* application/x-boxes3d with velocity=true */
  P3D_BOXES_TENSOR_VELOCITY = 2,
  P3D_BOXES3D_N_TENSORS_VELOCITY = 3,
};

typedef struct
{
  guint max_boxes;
  gint fps_n;
  gint fps_d;
  /* the velocity tensor follows the count */
  gboolean velocity;

  /*< private > */
  gpointer _gst_reserved[GST_PADDING];
} P3dBoxes3dInfo;

typedef struct
{
  guint max_boxes;
  gint fps_n;
  gint fps_d;

  /*< private > */
  gpointer _gst_reserved[GST_PADDING];
} P3dBoxes2dInfo;

void p3d_boxes3d_info_init (P3dBoxes3dInfo * info);
gboolean p3d_boxes3d_info_from_caps (P3dBoxes3dInfo * info,
    const GstCaps * caps);
GstCaps *p3d_boxes3d_info_to_caps (const P3dBoxes3dInfo * info);
gboolean p3d_boxes3d_info_is_equal (const P3dBoxes3dInfo * a,
    const P3dBoxes3dInfo * b);
void p3d_boxes3d_info_get_layout (const P3dBoxes3dInfo * info,
    P3dTensorLayout * layout);

void p3d_boxes2d_info_init (P3dBoxes2dInfo * info);
gboolean p3d_boxes2d_info_from_caps (P3dBoxes2dInfo * info,
    const GstCaps * caps);
GstCaps *p3d_boxes2d_info_to_caps (const P3dBoxes2dInfo * info);
gboolean p3d_boxes2d_info_is_equal (const P3dBoxes2dInfo * a,
    const P3dBoxes2dInfo * b);
void p3d_boxes2d_info_get_layout (const P3dBoxes2dInfo * info,
    P3dTensorLayout * layout);

G_END_DECLS

#endif /* __P3D_BOXES_H__ */
