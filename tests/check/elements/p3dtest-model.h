/* The tiny CenterPoint-pillar model of the tests of pillarencode and
 * bevdetect (its tensors from p3dtest-tinymodel.h), the `p3d.model` config
 * that describes it, its weights files with the mutations the bad-weights
 * tests need, bevdetect's input and output, and the reference's boxes.
 *
 * The architecture: a 16 x 16 pillar grid of 0.5 m cells over
 * <-4, -4, -5, 4, 4, 3>, 11 mmdet3d point features, 8 PFN channels, a
 * SECOND backbone of two stride-2 stages (8 and 16 channels), a SECONDFPN
 * neck (a 1x1 transposed conv and a 2x2 transposed conv, 8 channels each)
 * and a CenterHead on the 8 x 8 map with one or two tasks, small enough
 * for the reference path to run a frame in milliseconds (also under
 * valgrind). */
#ifndef MODEL_TEST_H
#define MODEL_TEST_H

#include <gst/gst.h>

#include "boxes.h"
#include "p3dtest.h"
#include "p3dtest-tinymodel.h"
#include "p3dtest-bevdet.h"

G_BEGIN_DECLS

#define MODELTEST_GRID 16
#define MODELTEST_HEAD_GRID 8
#define MODELTEST_VOXEL 0.5
#define MODELTEST_PFN_IN 11
#define MODELTEST_PFN_OUT 8
#define MODELTEST_MAX_POINTS 4
#define MODELTEST_MAX_VOXELS 64
#define MODELTEST_MAX_NUM 30
#define MODELTEST_POST_MAX 20
#define MODELTEST_SCORE_THRESHOLD 0.1
#define MODELTEST_PFN_EPS 0.0009765625  /* 2^-10: var 1 - eps folds exactly */

/* Caps fields of the model's grid, for x-pillar-features. */
#define MODELTEST_GRID_FIELDS "grid=(int)<16,16,1>, " \
  "voxel-size=(double)<0.5,0.5,8.0>, range=(double)<-4.0,-4.0,-5.0,4.0,4.0,3.0>"

typedef struct
{
  guint n_tasks;                /* 1 (car) or 2 (car; pedestrian, cyclist) */
  gboolean rotate;              /* rotate NMS, else circle */
  guint64 seed;
  guint head_conv;              /* the heads' ConvModule channels; 0: 8 (32
                                 * and up: the build merges the heads) */
} ModeltestOptions;

typedef TinyModelTensor ModeltestTensor;

typedef struct
{
  TinyModel *weights;
  gchar *config;                /* the `p3d.model` JSON */
  guint n_tasks;
  guint n_classes;
} ModeltestModel;

ModeltestModel *modeltest_model_new (const ModeltestOptions * options);
void modeltest_model_free (ModeltestModel * m);
/* The tensor @name (fails the test when there is none). */
ModeltestTensor *modeltest_model_get (ModeltestModel * m, const gchar * name);
/* Sets every value of the head's layers to zero but the final biases:
 * every cell of every map then holds the bias, so the decode's boxes are
 * computable by hand. */
void modeltest_model_zero_head (ModeltestModel * m);

/* How a written file departs from the model. */
typedef struct
{
  const gchar *drop;            /* tensor left out */
  const gchar *reshape;         /* tensor written with @shape instead */
  guint n_dims;
  gint64 shape[4];
  const gchar *as_i32;          /* tensor written as I32 */
  const gchar *config_old;      /* replaced once in the config by */
  const gchar *config_new;      /* this */
  gboolean no_config;           /* no `p3d.model` metadata at all */
} ModeltestMutation;

/* Writes @m (with @mutation, may be NULL) to a new temporary file and
 * returns its path; remove it with modeltest_remove(). */
gchar *modeltest_model_write (ModeltestModel * m,
    const ModeltestMutation * mutation);
void modeltest_remove (gchar * path);

/* Sets the element's state to PAUSED, which must fail with an error of
 * @domain / @code whose text contains every string of the NULL-terminated
 * list; returns that text (free it). */
gchar *modeltest_expect_start_error (GstElement * element, GQuark domain,
    gint code, ...) G_GNUC_NULL_TERMINATED;

/* ---- bevdetect's input and output ---------------------------------- */

#define MODELTEST_CANVAS_VALUES \
  (MODELTEST_PFN_OUT * MODELTEST_GRID * MODELTEST_GRID)

/* A canvas as pillarencode leaves it: a third of the cells zero (no
 * pillar), the others ReLU outputs in [0, 3). Free with g_free(). */
gfloat *modeltest_random_canvas (guint64 seed);
/* A buffer of the canvas in F32 or F16; with @half the values in @canvas
 * are replaced by their F16 rounding, so that the expectation reads what
 * the element reads. */
GstBuffer *modeltest_canvas_buffer (gfloat * canvas, gboolean half);
/* The caps of bevdetect's input for the model. */
gchar *modeltest_bev_caps (const gchar * format);

/* The boxes of an x-boxes3d buffer (mapped on the host, a copy for CUDA
 * memory): the count, and a copy of the records in @boxes (g_free). */
guint modeltest_read_boxes (GstBuffer * buffer, P3dcBox3d ** boxes);
/* ... and a copy of the velocity tensor in @velocity (2 floats a record,
 * the whole capacity; NULL when the buffer has none). */
guint modeltest_read_boxes_velocity (GstBuffer * buffer, P3dcBox3d ** boxes,
    gfloat ** velocity);

/* The boxes the compute library's reference (p3dc_convnet_cpu, then
 * p3dc_centerpoint_decode_cpu) makes of @canvas with the model in @path,
 * written from @options, with the decode parameters written out here from
 * the model's config; with @nms the model's test-time NMS; their
 * velocities (the capacity's, g_free) in @velocity when not NULL. */
guint modeltest_reference_boxes (const gchar * path,
    const ModeltestOptions * options, gboolean nms, const gfloat * canvas,
    P3dcBox3d ** boxes, gfloat ** velocity);
/* Boxes the element's output holds: n_tasks * min (max_num, post_max)
 * with the model's NMS, n_tasks * max_num without. */
/* The buffers of the model at @path that its heads' maps occupy: one when
 * the build merged the heads, else one a head. */
guint modeltest_head_buffers (const gchar * path);

guint modeltest_capacity (const ModeltestOptions * options, gboolean nms);

/* ---- tiny camera models: BEVDet (p3dtest-bevdet.h) ------------------ */

/* @arch's model, random from @seed, written to a new temporary file (its
 * path, for modeltest_remove()). */
gchar *modeltest_bevdet_write (const P3dTestBevDetArch * arch, guint64 seed);
/* The caps of bevdetect's input for @arch: bevpool's output on its grid. */
gchar *modeltest_bevdet_caps (const P3dTestBevDetArch * arch,
    const gchar * format);
/* A random BEV canvas of @arch ([C][grid y][grid x], pooled features:
 * non-negative, a third of the cells empty). */
gfloat *modeltest_bevdet_canvas (const P3dTestBevDetArch * arch,
    guint64 seed);
GstBuffer *modeltest_bevdet_buffer (const P3dTestBevDetArch * arch,
    gfloat * canvas, gboolean half);
/* What the model layer makes of @canvas with the weights in @path: its
 * "bev" network on the reference (p3dc_convnet_cpu) and its decoder (with
 * its test-time NMS when @nms); the boxes, and the velocities of the whole
 * capacity (zeros when the model has none) and the capacity. */
guint modeltest_bevdet_reference (const gchar * path, gboolean nms,
    const gfloat * canvas, P3dcBox3d ** boxes, gfloat ** velocity,
    guint * capacity);

/* The bad weights every network element must refuse when it starts, each
 * with an error naming the file and what is wrong (no weights property, a
 * missing file, not safetensors, a missing tensor, a wrong shape, an
 * unsupported dtype, bad or absent metadata): runs case @index on a new
 * @factory element. */
guint modeltest_n_bad_weights (void);
void modeltest_check_bad_weights (const gchar * factory, guint index);

G_END_DECLS

#endif /* MODEL_TEST_H */
