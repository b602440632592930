/* boxparse: JSON lines or KITTI label lines -> application/x-boxes3d or
 * application/x-boxes2d in system memory, one buffer per frame. */
#ifndef __P3D_BOX_PARSE_H__
#define __P3D_BOX_PARSE_H__

#include <gst/base/gstbaseparse.h>

#include "p3dboxtext.h"
#include "p3dperception.h"

G_BEGIN_DECLS

/* What box-type asks for: the stream's kind of box, or AUTO to take it
 * from the text (or from downstream when the text has said nothing). */
typedef enum {
  P3D_BOX_TYPE_AUTO = 0,
  P3D_BOX_TYPE_3D = 1,
  P3D_BOX_TYPE_2D = 2,
} P3dBoxType;

#define P3D_TYPE_BOX_PARSE (p3d_box_parse_get_type())
G_DECLARE_FINAL_TYPE(P3dBoxParse, p3d_box_parse, P3D, BOX_PARSE, GstBaseParse);

struct _P3dBoxParse {
  GstBaseParse parent;

  /* properties, under the object lock */
  P3dBoxTextFormat format;
  guint max_boxes;
  P3dBoxType box_type;
  gchar *labels_text;
  gchar **labels;
  gboolean frame_per_buffer;
  gboolean velocity;

  /* streaming (the properties as they were at READY -> PAUSED) */
  P3dBoxTextFormat stream_format;
  guint stream_max_boxes;
  gchar **stream_labels;
  gboolean stream_frame_per_buffer;
  gboolean stream_velocity;
  P3dBoxKind kind; /* the stream's, once known */
  gboolean failed; /* an error was posted: read no more */
  gboolean caps_sent;
  GString *line;             /* the line being read, NUL-terminated */
  gsize scan_offset;         /* handle_frame's bytes read into the frame */
  gsize search_offset;       /* ... and searched for a line end */
  guint64 line_number;       /* of the last line read */
  guint64 buffer_number;     /* frame-per-buffer: input buffers read */
  GstClockTime buffer_pts;   /* frame-per-buffer: the input buffer's */
  guint64 frames_out;
  GstClockTime out_pts; /* of the frame being pushed */

  /* the frame being read */
  gboolean frame_open; /* it has a frame line or a box line */
  gboolean frame_has_header;
  guint64 frame_header_line;
  guint64 frame_pts;
  gint64 frame_count; /* announced by its frame line, or -1 */
  guint8 *records;    /* stream_max_boxes records */
  gfloat *velocities; /* with stream_velocity: their vx, vy */
  guint n_records;
  guint n_box_lines;          /* n_records plus those beyond max-boxes */
  gboolean saturated;         /* the last frame had boxes dropped */
  GHashTable *unknown_labels; /* type names already warned about */
};

GST_ELEMENT_REGISTER_DECLARE (boxparse);

G_END_DECLS

#endif /* __P3D_BOX_PARSE_H__ */
