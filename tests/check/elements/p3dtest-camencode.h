/* What the tests of camencode share: tiny BEVDet models written to files
 * (p3dtest-bevdet.h: a 64 x 96 network input, its data config BEVDet's
 * scaled to it: src size 384 x 256, resize_test 0.04), camera frames of
 * smooth random pixels in any format with their caps, harnesses on every
 * sink pad of one element, and the output the compute library's
 * reference path (p3dc_camprep_cpu, p3dc_convnet_cpu) makes of a set of
 * frames, written out here without the element's code. */
#ifndef P3D_TEST_CAMENCODE_H
#define P3D_TEST_CAMENCODE_H

#include <gst/gst.h>
#include <gst/check/gstharness.h>

#include "p3dtest-bevdet.h"

G_BEGIN_DECLS

typedef struct
{
  P3dTestBevDetArch arch;
  TinyModel *weights;
  gchar *config;
  gchar *path;                  /* the file written */
} CamencodeTestModel;

/* A model of @cameras cameras (random weights from @seed), written. */
CamencodeTestModel *camencode_test_model_new (guint cameras, guint64 seed);
/* Writes the model again with @old replaced by @new in its config (both
 * NULL: unchanged) and returns the new path (free it, and remove the file
 * with g_remove()). */
gchar *camencode_test_model_write (CamencodeTestModel * m, const gchar * old,
    const gchar * new);
void camencode_test_model_free (CamencodeTestModel * m);

/* Caps of @format frames (a GstVideoFormat name) of @width x @height at
 * @fps_n / 1 (0: no framerate); YUV frames full-range BT.601, as jpegdec
 * gives them. */
gchar *camencode_test_caps (const gchar * format, guint width, guint height,
    gint fps_n);

/* A frame for @caps: smooth random pixels from @seed (padding bytes
 * random too), pts @pts (GST_CLOCK_TIME_NONE: none), duration 100 ms. */
GstBuffer *camencode_test_frame (const gchar * caps, guint64 seed,
    GstClockTime pts);

/* camencode with @properties (backend, missing-camera, ...) and the model
 * of @path: one harness on each sink pad sink_0 ... sink_<n-1>, the first
 * also on the src pad, whose caps it asks for (@sink_caps: NULL for any);
 * @caps[k] the caps of camera k. Playing, with a bus of its own set
 * before the first harness (gst_element_get_bus()), so that no message
 * is lost. */
GstHarness **camencode_test_harnesses (const gchar * path,
    const gchar * properties, guint n, const gchar * const *caps,
    const gchar * sink_caps);
void camencode_test_harnesses_free (GstHarness ** h, guint n);

/* The output of the reference path for frames[k] (with caps[k]) of the
 * model in @path: features [N][H][W][C] and depth [N][D][H][W] in F32, or
 * F16 rounded from them when @half. */
void camencode_test_expected (const gchar * path, GstBuffer ** frames,
    const gchar * const *caps, gboolean half, GBytes ** features,
    GBytes ** depth);

/* Fails unless @out holds @features and @depth, naming @what. */
void camencode_test_assert_output (GstBuffer * out, GBytes * features,
    GBytes * depth, const gchar * what);

/* The 6 numbers of camera @camera's image-aug in the caps of @h's src
 * pad's peer (the output caps). */
void camencode_test_image_aug (GstHarness * h, guint camera, gdouble aug[6]);

G_END_DECLS

#endif /* P3D_TEST_CAMENCODE_H */
