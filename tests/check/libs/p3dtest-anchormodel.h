/* Tiny PointPillars models with an anchor head, in either framework's
 * conventions (OpenPCDet's PointPillar: vfe., backbone_2d.blocks with the
 * ZeroPad2d at index 0, dense_head.conv_cls / conv_box / conv_dir_cls,
 * anchors spanning the range; mmdetection3d's VoxelNet: voxel_encoder.,
 * backbone.blocks, neck.deblocks, bbox_head.conv_cls / conv_reg /
 * conv_dir_cls, anchors at cell centres, its direction offset), for the
 * tests of the model family, pillarencode and bevdetect: random weights
 * (p3dtest-tinymodel.h, class biases that let a share of the anchors pass
 * the 0.1 threshold, small box deltas), the `p3d.model` document the
 * converters would write for them, the test's own statement of the "bev"
 * network as a graph, the decode's parameters written out here, and the
 * boxes by brute force: the pillar net in float64 from the raw tensors,
 * the graph evaluated by the float64 oracle (p3dtest-modeloracle.h), the
 * maps decoded by the anchor decode's reference.
 *
 * The architecture: a 16 x 16 grid of 0.5 m pillars over x 0 .. 8, y -4
 * .. 4, z -3 .. 1 (KITTI's layout, smaller), pointpillars-10 features of 4
 * point channels, 8 PFN channels, SECOND of two stride-2 stages (8 and 16
 * channels, one more conv each), SECONDFPN to 8 + 8 channels on the 8 x 8
 * map, two classes (car, pedestrian; mmdetection3d's order pedestrian,
 * car) with one size and two rotations each: 4 anchors a location. */
#ifndef P3D_TEST_ANCHOR_MODEL_H
#define P3D_TEST_ANCHOR_MODEL_H

#include <glib.h>

#include "anchor3d_decode.h"
#include "p3dtest.h"
#include "p3dtest-tinymodel.h"

G_BEGIN_DECLS

#define ANCHORMODEL_GRID 16
#define ANCHORMODEL_HEAD_GRID 8
#define ANCHORMODEL_PFN_IN 10
#define ANCHORMODEL_PFN_OUT 8
#define ANCHORMODEL_MAX_POINTS 4
#define ANCHORMODEL_MAX_VOXELS 64
#define ANCHORMODEL_CLASSES 2
#define ANCHORMODEL_ANCHORS 4
#define ANCHORMODEL_SCORE_THRESHOLD 0.1

/* Caps fields of the model's grid, for x-pillar-features. */
#define ANCHORMODEL_GRID_FIELDS "grid=(int)<16,16,1>, " \
  "voxel-size=(double)<0.5,0.5,4.0>, range=(double)<0.0,-4.0,-3.0,8.0,4.0,1.0>"

typedef struct
{
  gboolean mmdet3d;             /* else OpenPCDet */
  gboolean per_class;           /* OpenPCDet's MULTI_CLASSES_NMS */
  gboolean no_direction;        /* no direction classifier */
  gboolean velocity;            /* code size 9 */
  guint64 seed;
} AnchorModelOptions;

typedef struct
{
  AnchorModelOptions options;
  TinyModel *weights;
  gchar *config;                /* the `p3d.model` JSON */
  gchar *graph;                 /* the "bev" network as the test states it */
  /* the framework's state_dict prefixes */
  const gchar *pfn, *blocks, *deblocks, *cls, *box, *dir;
  guint block_conv_offset;
} AnchorModel;

AnchorModel *anchormodel_new (const AnchorModelOptions * options);
void anchormodel_free (AnchorModel * m);

/* Writes @m to a new temporary file: its config with @old replaced by @new
 * (when @old is not NULL; NULL @new: no metadata at all), with the test's
 * "graph" when @with_graph, its tensors changed by @mutation (may be
 * NULL).  Remove it with g_unlink(). */
gchar *anchormodel_write (AnchorModel * m, const gchar * old,
    const gchar * new, gboolean with_graph,
    const TinyModelMutation * mutation);

/* The anchor sets (returns their number) and the decode's parameters as the
 * config says, written out here; without @nms every listed candidate (no
 * suppression). */
guint anchormodel_anchor_sets (const AnchorModel * m, P3dcAnchor3dSet * sets);
void anchormodel_decode_params (const AnchorModel * m, gboolean nms,
    P3dcAnchor3dParams * params);
/* The boxes a frame can give (bevdetect's max-boxes). */
guint anchormodel_capacity (const AnchorModel * m, gboolean nms);

/* One frame of x-pillar-features for the model (pointpillars-10, F32):
 * @count pillars in distinct cells, 1 to max-points points each, the
 * features of the points random in ranges like pillarfeat's. */
typedef struct
{
  gfloat features[ANCHORMODEL_MAX_VOXELS * ANCHORMODEL_MAX_POINTS *
      ANCHORMODEL_PFN_IN];
  gint32 coords[ANCHORMODEL_MAX_VOXELS * 4];
  guint32 count;
} AnchorModelPillars;

void anchormodel_random_pillars (guint64 seed, guint count,
    AnchorModelPillars * pillars);

/* The canvas [PFN_OUT][GRID][GRID] by brute force: per pillar and point
 * slot (the empty ones too, as the framework's masked points) the linear
 * layer and BatchNorm in float64 from the raw tensors, ReLU, the maximum
 * over the slots, at the pillar's cell; zero elsewhere.  Rounded to float:
 * g_free() it. */
gfloat *anchormodel_oracle_canvas (AnchorModel * m,
    const AnchorModelPillars * pillars);

/* The boxes of @canvas by brute force: the test's graph evaluated by the
 * float64 oracle, its head maps rounded to float and decoded by
 * p3dc_anchor3d_decode_cpu() with anchormodel_decode_params(); the count,
 * the boxes in @boxes (g_free). */
guint anchormodel_oracle_boxes (AnchorModel * m, gboolean nms,
    const gfloat * canvas, P3dcBox3d ** boxes);

/* Matches @actual against @expected: the same count, each expected box
 * paired with an actual one of its label within @tolerance of 1 + |value|
 * on every field (yaw modulo 2 pi); fails naming the box.  Returns the
 * largest difference. */
gdouble anchormodel_match_boxes (const P3dcBox3d * actual, guint n_actual,
    const P3dcBox3d * expected, guint n_expected, gdouble tolerance,
    const gchar * what);

G_END_DECLS

#endif /* P3D_TEST_ANCHOR_MODEL_H */
