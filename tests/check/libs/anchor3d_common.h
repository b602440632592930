/* What the anchor-head decode tests share (anchor3d_decode.c, its CUDA
 * program and bench_anchor3d): KITTI's anchor sets as OpenPCDet's and
 * mmdetection3d's PointPillars configs give them, and head outputs held in
 * one host tensor with its views. */
#ifndef P3D_TEST_ANCHOR3D_COMMON_H
#define P3D_TEST_ANCHOR3D_COMMON_H

#include <glib.h>

#include "anchor3d_decode.h"
#include "p3dtest.h"

G_BEGIN_DECLS

/* OpenPCDet's tools/cfgs/kitti_models/pointpillar.yaml: Car, Pedestrian,
 * Cyclist over [0, 69.12] x [-39.68, 39.68], rotations 0 and 1.57, corners
 * (align_center False).  Returns the number of sets (3). */
guint p3d_test_anchor3d_openpcdet_kitti (P3dcAnchor3dSet * sets);

/* mmdetection3d's pointpillars_hv_secfpn_kitti.py: Pedestrian, Cyclist,
 * Car, AlignedAnchor3DRangeGenerator (centres).  Returns 3. */
guint p3d_test_anchor3d_mmdet3d_kitti (P3dcAnchor3dSet * sets);

/* OpenPCDet's post-processing of pointpillar.yaml, and mmdetection3d's
 * test_cfg, for 3 classes. */
void p3d_test_anchor3d_openpcdet_params (P3dcAnchor3dParams * params);
void p3d_test_anchor3d_mmdet3d_params (P3dcAnchor3dParams * params);

/* The head's three outputs in one host float32 tensor, NCHW: cls
 * (A x C channels), box (A x code_size), dir (A x dir_bins). */
typedef struct
{
  guint32 anchors, classes, code_size, dir_bins, height, width;
  gfloat *data;
} P3dTestHead;

void p3d_test_head_init (P3dTestHead * head, const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table);
void p3d_test_head_clear (P3dTestHead * head);
guint32 p3d_test_head_channels (const P3dTestHead * head);
gfloat *p3d_test_head_cls (P3dTestHead * head, guint32 k, guint32 c,
    guint32 y, guint32 x);
gfloat *p3d_test_head_box (P3dTestHead * head, guint32 k, guint32 j,
    guint32 y, guint32 x);
gfloat *p3d_test_head_dir (P3dTestHead * head, guint32 k, guint32 b,
    guint32 y, guint32 x);

/* NCHW float32 views of the head's data at @base (the host tensor, or a
 * device copy of it). */
void p3d_test_head_maps (const P3dTestHead * head, const void *base,
    P3dcAnchor3dMaps * maps);
/* Views of an NHWC F16 copy whose pixels hold @stride channels (the conv
 * net's F16 storage pads them to a multiple of 8). */
void p3d_test_head_maps_nhwc (const P3dTestHead * head, const void *base,
    guint32 stride, P3dcAnchor3dMaps * maps);
/* That copy: [H][W][stride] F16, padding zero. */
guint16 *p3d_test_head_to_nhwc (const P3dTestHead * head, guint32 stride);

/* Random outputs, every value F16-exact: class logits such that about
 * @hit_rate of (anchor, class) pairs score above 0.1 (with @ties, few
 * distinct logits), box deltas in ranges that give boxes near their
 * anchors, direction logits either way. */
void p3d_test_head_fill (P3dTestHead * head, P3dTestRng * rng,
    gdouble hit_rate, gboolean ties);

G_END_DECLS

#endif /* P3D_TEST_ANCHOR3D_COMMON_H */
