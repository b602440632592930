/* pcdparse: PCD files (one or more, back to back) -> application/x-point-cloud
 * in system or CUDA memory, one buffer per file. */
#ifndef __P3D_PCD_PARSE_H__
#define __P3D_PCD_PARSE_H__

#include <gst/base/gstadapter.h>

#include "p3dperception.h"

G_BEGIN_DECLS

/* What a source may call PCD bytes; pcdparse also takes them without caps
 * (filesrc, multifilesrc) and as text/plain or application/octet-stream. */
#define P3D_MEDIA_TYPE_PCD "application/x-pcd"

typedef enum
{
  P3D_PCD_PARSE_FORMAT_AUTO = 0,
  P3D_PCD_PARSE_FORMAT_XYZ = P3D_POINT_FORMAT_XYZ,
  P3D_PCD_PARSE_FORMAT_XYZI = P3D_POINT_FORMAT_XYZI,
  P3D_PCD_PARSE_FORMAT_XYZIT = P3D_POINT_FORMAT_XYZIT,
  P3D_PCD_PARSE_FORMAT_XYZIR = P3D_POINT_FORMAT_XYZIR,
} P3dPcdParseFormat;

#define P3D_TYPE_PCD_PARSE (p3d_pcd_parse_get_type ())
G_DECLARE_FINAL_TYPE (P3dPcdParse, p3d_pcd_parse, P3D, PCD_PARSE, GstElement);

struct _P3dPcdParse
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* properties, under the object lock */
  P3dPcdParseFormat format;
  gboolean drop_nonfinite;
  gboolean buffer_is_file;
  gint fps_n;
  gint fps_d;
  gint cuda_device_id;

  /* the "stats" property, under the object lock */
  guint64 stats_files;
  guint64 stats_points;
  guint64 stats_dropped;
  guint64 stats_offset;

  /* streaming: the properties as they were at READY -> PAUSED */
  P3dPcdParseFormat active_format;
  gboolean active_buffer_is_file;
  gint active_fps_n;
  gint active_fps_d;
  gint active_device_id;

  /* the bytes received and not yet taken out as files */
  GstAdapter *adapter;
  /* stream byte offset of the adapter's first byte */
  guint64 offset;
  /* the adapter is scanned again only once it holds this many bytes, and
   * (for an ASCII file whose header is in) this many newlines: the header's
   * lines and one per point */
  gsize wait_for;
  guint64 newlines_needed;
  guint64 newlines;
  /* files output since the start, and since the last flush (the frame
   * counter of framerate timestamps) */
  guint64 files;
  guint64 frame;
  /* an error was posted: read no more */
  gboolean failed;
  gboolean discont;

  /* upstream's segment, forwarded when it is in time; else our own */
  GstSegment in_segment;
  guint32 segment_seqnum;
  gboolean need_segment;

  /* negotiated */
  GstCaps *caps;
  P3dPointCloudInfo info;
  gboolean cuda;
  /* the pool, and how many points its tensors hold */
  GstBufferPool *pool;
  gsize pool_points;
  P3dTensorLayout layout;
};

G_END_DECLS

#endif /* __P3D_PCD_PARSE_H__ */
