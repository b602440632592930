/* pcdparse: PCD files (one or more, back to back) -> application/x-point-cloud
 * in system or CUDA memory, one buffer per file. */
#ifndef __P3D_PCD_PARSE_H__
#define __P3D_PCD_PARSE_H__

#include <gst/base/gstbaseparse.h>

#include "p3dperception.h"
#include "pcdparse-reader.h"

G_BEGIN_DECLS

#define P3D_TYPE_PCD_PARSE (p3d_pcd_parse_get_type())
G_DECLARE_FINAL_TYPE(P3dPcdParse, p3d_pcd_parse, P3D, PCD_PARSE, GstBaseParse);

/* What a frame that is not a whole file waits for before it is scanned
 * again (see wait_for_more() in gstpcdparse.c). */
typedef enum {
  WAIT_NONE,
  WAIT_NEWLINE,
  WAIT_POINT_LINES,
} P3dPcdParseWait;

struct _P3dPcdParse {
  GstBaseParse parent;

  /* properties, under the object lock */
  P3dPointFormat format;
  gboolean drop_nonfinite;
  gboolean buffer_is_file;
  gint fps_n;
  gint fps_d;
  guint64 max_file_size;
  gint cuda_device_id;
  /* the device shared in the pipeline (p3dcudacontext.h) */
  GstContext *context;

  /* the "stats" property, under the object lock */
  guint64 stats_files;
  guint64 stats_scanned;
  guint64 stats_points;
  guint64 stats_dropped;
  guint64 stats_overflow;
  guint64 stats_offset;

  /* streaming: the properties as they were at start */
  P3dPointFormat active_format;
  gboolean active_buffer_is_file;
  gint active_fps_n;
  gint active_fps_d;
  guint64 active_max_file_size;
  gint active_device_id;

  /* stream byte offset of the first byte handle_frame is given, and the
   * padding skipped before it (part of the file that follows) */
  guint64 offset;
  gsize padding;
  guint64 padding_lines;
  /* what an incomplete file waits for: a newline, or its point lines
   * counted on each new input buffer */
  P3dPcdParseWait wait;
  P3dPcdLineCounter counter;
  guint64 lines_needed;
  /* files output since the start, and since the last flush (the frame
   * counter of framerate timestamps) */
  guint64 files;
  guint64 frame;
  /* an error was posted: read no more, return failed_flow */
  gboolean failed;
  GstFlowReturn failed_flow;
  /* the next file output follows a discontinuity */
  gboolean discont;
  /* upstream's segment is in time: its timestamps are the files' */
  gboolean upstream_time;
  gboolean warned_overflow;

  /* negotiated */
  GstCaps *caps;
  P3dPointCloudInfo info;
  gboolean cuda;
  /* the pool, and how many points its tensors hold */
  GstBufferPool *pool;
  gsize pool_points;
  P3dTensorLayout layout;
};

GST_ELEMENT_REGISTER_DECLARE (pcdparse);

G_END_DECLS

#endif /* __P3D_PCD_PARSE_H__ */
