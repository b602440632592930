/* What the pipeline benchmarks (bench_chain, bench_multigpu) share: the wall
 * clock, the wait for the end of a run, and the wait for the device through
 * the last output a pillarfeat chain left in its sink. */
#ifndef P3D_BENCH_PIPELINE_H
#define P3D_BENCH_PIPELINE_H

#include <gst/gst.h>

G_BEGIN_DECLS

/* Seconds of the monotonic clock. */
gdouble p3d_bench_now_s (void);

/* Waits for EOS or an error on @pipeline's bus; TRUE on EOS, else the error
 * is printed. */
gboolean p3d_bench_wait_eos (GstElement * pipeline);

/* Maps the count tensor of the last application/x-pillar-features buffer
 * that the element named "sink" (enable-last-sample=true) holds: returns
 * once the device has finished every frame queued before it, with the
 * voxel count it holds (0 without a sample). */
guint32 p3d_bench_wait_last_pillars (GstElement * pipeline);

G_END_DECLS

#endif /* P3D_BENCH_PIPELINE_H */
