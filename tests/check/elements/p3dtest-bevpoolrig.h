/* The test rig of bevpool, for its CPU and GPU element tests and the
 * failure tests: up to three cameras around the lidar, looking ahead, to
 * the left and behind, with intrinsics for a 48 x 32 image, in two
 * mountings (a recalibration); their calibration files in both documented
 * forms; the grid and feature sizes a test runs bevpool with, its caps and
 * properties; and frames of random camera features and depth. */
#ifndef BEVPOOL_RIG_H
#define BEVPOOL_RIG_H

#include <gst/gst.h>

#include "bevpool.h"

G_BEGIN_DECLS

#define BEVPOOLRIG_IMAGE_WIDTH 48
#define BEVPOOLRIG_IMAGE_HEIGHT 32

/* Fills @cameras[0..n_cameras) (n_cameras <= 3) with mounting @variant (0
 * or 1). */
void bevpoolrig_cameras (guint n_cameras, guint variant,
    P3dcCameraCalib * cameras);

/* The calibration as a JSON document in the "cameras" form (with names
 * cam0, cam1..., 3x3 intrinsics and img_aug) or in the per-tensor form of
 * CUDA-BEVFusion (4x4 everywhere). Every double is written exactly. */
gchar *bevpoolrig_calibration_json (const P3dcCameraCalib * cameras,
    guint n_cameras, gboolean tensor_form);

/* A new temporary directory for the calibration files of one test (remove
 * it with elemtest_remove_dir()). */
gchar *bevpoolrig_make_dir (void);

/* Fills @cameras with mounting @variant, writes their calibration in one
 * form to @name in @dir and returns the path. */
gchar *bevpoolrig_write_calibration (const gchar * dir, const gchar * name,
    guint n_cameras, guint variant, gboolean tensor_form,
    P3dcCameraCalib * cameras);

/* What bevpool runs with besides the calibration. */
typedef struct
{
  guint cameras;
  guint channels;
  guint feat_width;
  guint feat_height;
  gdouble xbound[3];
  gdouble ybound[3];
  gdouble zbound[3];
  gdouble dbound[3];
  P3dcBevRounding rounding;
  P3dcBevLayout layout;
} BevpoolrigConfig;

/* Two cameras, three channels, 6 x 4 features; 16 x 8 cells of 1 m in one
 * 6 m z cell, 8 depth bins from 1 m: the rig's frustums reach below the
 * lower y and z bounds. */
extern const BevpoolrigConfig bevpoolrig_small_config;
#define BEVPOOLRIG_DEPTH_BINS 8

/* The caps of camera features for @c (10 frames per second). */
gchar *bevpoolrig_caps (const BevpoolrigConfig * c, guint depth_bins,
    gboolean half);

/* bevpool's properties for @c and @calibration, without backend, then
 * @extra (may be NULL), which overrides what it names again. */
gchar *bevpoolrig_properties (const BevpoolrigConfig * c,
    const gchar * calibration, const gchar * extra);

/* One frame of camera features (in [-1, 1)) and depth (in [0, 1)), random
 * from a seed, in F32 or F16. */
typedef struct
{
  gboolean half;
  gsize sizes[2];
  gpointer tensors[2];
} BevpoolrigFrame;

void bevpoolrig_frame_make (BevpoolrigFrame * f, const BevpoolrigConfig * c,
    guint depth_bins, gboolean half, guint64 seed);
void bevpoolrig_frame_clear (BevpoolrigFrame * f);
/* A buffer of copies of the frame's two tensors. */
GstBuffer *bevpoolrig_frame_buffer (const BevpoolrigFrame * f);

G_END_DECLS

#endif /* BEVPOOL_RIG_H */
