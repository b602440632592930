/* gst-perception: application/x-voxels, the output of voxelize.
 *
 * Caps fields: format (the point format of the voxelized points) and
 * channels (its number of float32 values), max-voxels, max-points (per
 * voxel), grid <x, y, z> (cells), voxel-size <x, y, z> and
 * range <xmin, ymin, zmin, xmax, ymax, zmax> (metres), optional framerate.
 * PointPillars pillars are the case grid z = 1.
 *
 * grid = round((max - min) / voxel-size), mmcv's rule, so a range that is
 * not a whole number of voxels is not the box voxelized: the cells cover
 * min .. min + grid x voxel-size per axis, which may end beyond max (points
 * past max kept) or before it (points before max dropped). to_caps() writes
 * that box as the optional field effective-range <xmin, ymin, zmin, xmax',
 * ymax', zmax'>; from_caps() accepts caps without it (it is derived) and
 * refuses one that disagrees with range, voxel-size and grid.
 *
 * Tensors, in this order:
 *   0 points      [max-voxels][max-points][channels] float32, unused slots 0
 *   1 num-points  [max-voxels] uint32, 0 beyond the count
 *   2 coords      [max-voxels][4] int32 = (batch 0, z, y, x), 0 beyond count
 *   3 count       [1] uint32, the number of voxels
 */
#ifndef __P3D_VOXELS_H__
#define __P3D_VOXELS_H__

#include <gst/gst.h>

#include "p3dformats.h"
#include "p3dtensor.h"

G_BEGIN_DECLS

#define P3D_MEDIA_TYPE_VOXELS "application/x-voxels"

/* Pad template caps: every point format, any sizes. */
#define P3D_VOXELS_CAPS_ALL \
    P3D_MEDIA_TYPE_VOXELS ", format = (string) " P3D_POINT_FORMATS_ALL

enum
{
  P3D_VOXELS_TENSOR_POINTS = 0,
  P3D_VOXELS_TENSOR_NUM_POINTS = 1,
  P3D_VOXELS_TENSOR_COORDS = 2,
  P3D_VOXELS_TENSOR_COUNT = 3,
  P3D_VOXELS_N_TENSORS = 4,
};

/* Limits of the caps fields (sizes beyond are refused). */
#define P3D_VOXELS_MAX_VOXELS (1u << 22)
#define P3D_VOXELS_MAX_POINTS 1024

/**
 * P3dVoxelGrid:
 * @grid: cells along x, y, z: round((max - min) / size), which cover
 *     min .. min + grid x size (p3d_voxel_grid_get_effective_range())
 * @voxel_size: cell size along x, y, z in metres
 * @range: xmin, ymin, zmin, xmax, ymax, zmax in metres
 */
typedef struct
{
  guint grid[3];
  gdouble voxel_size[3];
  gdouble range[6];
} P3dVoxelGrid;

/* Sets @grid from a voxel size and range; FALSE when a size is not
 * positive, an extent is empty or a cell count does not fit. */
gboolean p3d_voxel_grid_set (P3dVoxelGrid * grid, const gdouble * voxel_size,
    const gdouble * range);
gboolean p3d_voxel_grid_is_equal (const P3dVoxelGrid * a,
    const P3dVoxelGrid * b);
/* TRUE when every extent (max - min) is a whole number of voxels, to a
 * millionth of a voxel (finer than float32 indices can tell apart). */
gboolean p3d_voxel_grid_is_whole (const P3dVoxelGrid * grid);
/* The box the cells cover: min, and min + grid x voxel-size as max on each
 * axis whose extent is not whole (on a whole axis, max itself). */
void p3d_voxel_grid_get_effective_range (const P3dVoxelGrid * grid,
    gdouble * effective_range);
/* The grid, voxel-size and range fields of a caps structure (the media
 * types that carry a voxel grid: voxels, pillar features), checked against
 * each other; the reason for a refusal is in the debug log. */
gboolean p3d_structure_get_voxel_grid (const GstStructure * s,
    P3dVoxelGrid * grid);
void p3d_structure_set_voxel_grid (GstStructure * s,
    const P3dVoxelGrid * grid);

typedef struct
{
  const P3dPointFormatInfo *finfo;
  guint max_voxels;
  guint max_points;
  P3dVoxelGrid grid;
  gint fps_n;
  gint fps_d;

  /*< private > */
  gpointer _gst_reserved[GST_PADDING];
} P3dVoxelsInfo;

#define P3D_VOXELS_INFO_CHANNELS(info) ((info)->finfo->channels)

void p3d_voxels_info_init (P3dVoxelsInfo * info);
/* Sets every field but the framerate; FALSE on a value out of range. */
gboolean p3d_voxels_info_set (P3dVoxelsInfo * info, P3dPointFormat format,
    guint max_voxels, guint max_points, const gdouble * voxel_size,
    const gdouble * range);
gboolean p3d_voxels_info_from_caps (P3dVoxelsInfo * info,
    const GstCaps * caps);
GstCaps *p3d_voxels_info_to_caps (const P3dVoxelsInfo * info);
gboolean p3d_voxels_info_is_equal (const P3dVoxelsInfo * a,
    const P3dVoxelsInfo * b);
void p3d_voxels_info_get_layout (const P3dVoxelsInfo * info,
    P3dTensorLayout * layout);
/* Bytes of one buffer (all four tensors) of @max_voxels voxels of
 * @max_points points of @channels floats; caps whose record is larger
 * than P3D_RECORD_MAX_BYTES are refused. */
guint64 p3d_voxels_get_record_size (guint max_voxels, guint max_points,
    guint channels);

G_END_DECLS

#endif /* __P3D_VOXELS_H__ */
