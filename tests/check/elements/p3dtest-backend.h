/* What the GPU tests of the filters share: one element run twice in
 * harnesses, backend=cuda (output negotiated in system memory or in
 * memory:CUDAMemory) beside backend=cpu, fed the same frames and compared
 * tensor by tensor to the byte; and the random sweeps whose voxel counts go
 * up and down, which the voxelize and pillarfeat comparisons both feed. */
#ifndef BACKEND_TEST_H
#define BACKEND_TEST_H

#include <gst/gst.h>
#include <gst/check/gstharness.h>

#include "p3dperception.h"

G_BEGIN_DECLS

/* Appended to a media type to ask for CUDA memory. */
#define BACKENDTEST_CUDA_FEATURE "(" P3D_CAPS_FEATURE_MEMORY_CUDA ")"

/* What one element is compared on: its properties (without backend), its
 * input caps, the media type and fields of its output caps. */
typedef struct
{
  const gchar *element;
  const gchar *properties;
  const gchar *src_caps;
  const gchar *sink_media_type;
  const gchar *sink_fields;
} BackendtestSetup;

/* A harness of @setup's element with @backend, its output in CUDA memory
 * when @cuda_out. */
GstHarness *backendtest_harness (const BackendtestSetup * setup,
    const gchar * backend, gboolean cuda_out);

/* Fails unless @element in @h reads @expected (a P3dBackend) in its
 * active-backend property. */
void backendtest_assert_active (GstHarness * h, const gchar * element,
    gint expected);

/* Every tensor of @cuda_out equals @cpu_out's, and lives in CUDA memory
 * exactly when @cuda_memory (read back through the host copy of a map). */
void backendtest_assert_same_output (GstBuffer * cuda_out,
    GstBuffer * cpu_out, gboolean cuda_memory, const gchar * what);

/* Pushes @input (not taken) into both harnesses, pulls one buffer from
 * each and compares them as above. */
void backendtest_push_compare (GstHarness * cpu, GstHarness * cuda,
    GstBuffer * input, gboolean cuda_memory, const gchar * what);

/* Pushes @inputs in order through backend=cuda (output in system memory,
 * then in CUDA memory) and backend=cpu, comparing frame by frame, after
 * checking that each runs the backend it was given. */
void backendtest_compare (const BackendtestSetup * setup,
    GstBuffer ** inputs, guint n_inputs);

void backendtest_unref_all (GstBuffer ** buffers, guint n);

/* Frames whose voxel counts go up and down, to empty and back, and
 * saturate max-voxels=500: their point counts. */
#define BACKENDTEST_N_FRAMES 8
extern const gsize backendtest_frame_points[BACKENDTEST_N_FRAMES];

/* A sweep of @n_points random xyzi points, most of them in a small part of
 * the KITTI range (an empty buffer when 0); with @copy, the points too
 * (g_free). */
GstBuffer *backendtest_points_buffer (guint64 seed, gsize n_points,
    gfloat ** copy);

G_END_DECLS

#endif /* BACKEND_TEST_H */
