/* gst-perception: application/x-pillar-features, the output of pillarfeat
 * and the input of a PointPillars network.
 *
 * Caps fields: format (F32 or F16), features (pointpillars-10, mmdet3d-9 or
 * pointpillars-11: the channel set, see docs/media-types.md), max-voxels,
 * max-points, and the voxel grid of the x-voxels it came from: grid,
 * voxel-size, range; optional framerate.
 *
 * Tensors, in this order:
 *   0 features [max-voxels][max-points][channels of the set] F32 or F16,
 *              0 for every unused point slot and voxel
 *   1 coords   [max-voxels][4] int32 = (batch 0, z, y, x), 0 beyond count
 *   2 count    [1] uint32
 */
#ifndef __P3D_PILLARS_H__
#define __P3D_PILLARS_H__

#include <gst/gst.h>

#include "p3dformats.h"
#include "p3dtensor.h"
#include "p3dvoxels.h"

G_BEGIN_DECLS

#define P3D_MEDIA_TYPE_PILLAR_FEATURES "application/x-pillar-features"

#define P3D_PILLARS_CAPS_ALL \
    P3D_MEDIA_TYPE_PILLAR_FEATURES ", format = (string) " \
    P3D_DATA_FORMATS_ALL ", features = (string) " P3D_FEATURE_SETS_ALL

enum
{
  P3D_PILLARS_TENSOR_FEATURES = 0,
  P3D_PILLARS_TENSOR_COORDS = 1,
  P3D_PILLARS_TENSOR_COUNT = 2,
  P3D_PILLARS_N_TENSORS = 3,
};

typedef struct
{
  P3dDataFormat format;
  P3dFeatureSet features;
  guint channels;
  guint max_voxels;
  guint max_points;
  P3dVoxelGrid grid;
  gint fps_n;
  gint fps_d;

  /*< private > */
  gpointer _gst_reserved[GST_PADDING];
} P3dPillarsInfo;

void p3d_pillars_info_init (P3dPillarsInfo * info);
/* Sets every field but the framerate from a voxels description. */
gboolean p3d_pillars_info_set (P3dPillarsInfo * info, P3dDataFormat format,
    P3dFeatureSet features, const P3dVoxelsInfo * voxels);
gboolean p3d_pillars_info_from_caps (P3dPillarsInfo * info,
    const GstCaps * caps);
GstCaps *p3d_pillars_info_to_caps (const P3dPillarsInfo * info);
gboolean p3d_pillars_info_is_equal (const P3dPillarsInfo * a,
    const P3dPillarsInfo * b);
void p3d_pillars_info_get_layout (const P3dPillarsInfo * info,
    P3dTensorLayout * layout);
/* Bytes of one buffer (all three tensors) of @max_voxels voxels of
 * @max_points points of @channels features in @format; caps whose record
 * is larger than P3D_RECORD_MAX_BYTES are refused. */
guint64 p3d_pillars_get_record_size (guint max_voxels, guint max_points,
    guint channels, P3dDataFormat format);

G_END_DECLS

#endif /* __P3D_PILLARS_H__ */
