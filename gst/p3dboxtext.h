/* gst-perception: box records as lines of text, the formats that boxenc
 * writes and boxparse reads (docs/elements/boxenc.md describes them).
 *
 * JSON lines: a frame line {"frame":N,"pts":T,"count":K,"type":"3d"} and
 * one object per box with the record's fields by name (a 3D box with a
 * velocity also "vx" and "vy", after "yaw"); numbers as
 * json-glib writes doubles (they read back to the same float), a
 * non-finite float as the string "NaN", "Infinity" or "-Infinity".
 * KITTI label lines: type truncated occluded alpha bbox(4) h w l x y z
 * rotation_y score, every float in the shortest decimal that reads back to
 * the same float, 3D boxes in the LiDAR frame as they are.
 *
 * No GStreamer here: GLib, json-glib and the records of cuda/boxes.h.
 */
#ifndef __P3D_BOX_TEXT_H__
#define __P3D_BOX_TEXT_H__

#include <glib-object.h>

#include "boxes.h"
#include "p3dfileformats.h"

G_BEGIN_DECLS

typedef enum
{
  P3D_BOX_TEXT_JSON = 0,
  P3D_BOX_TEXT_KITTI = 1,
} P3dBoxTextFormat;

#define P3D_TYPE_BOX_TEXT_FORMAT (p3d_box_text_format_get_type ())
GType p3d_box_text_format_get_type (void);

/* Which record a line holds; UNKNOWN while a stream has not said. */
typedef enum
{
  P3D_BOX_KIND_UNKNOWN = 0,
  P3D_BOX_KIND_3D = 1,
  P3D_BOX_KIND_2D = 2,
} P3dBoxKind;

/* The label names of KITTI's object benchmark, label 0 first. */
#define P3D_BOX_TEXT_DEFAULT_LABELS "Car,Pedestrian,Cyclist"

/* Room for any float as text, with its NUL. */
#define P3D_BOX_TEXT_FLOAT_SIZE 32

/* A pts that a frame line does not give (absent or null). */
#define P3D_BOX_TEXT_NO_PTS G_MAXUINT64

/* The shortest decimal (at most 9 significant digits, "%g" style, C
 * locale) that p3d_box_text_parse_float() reads back to @value bit for
 * bit; "nan", "inf" and "-inf" for the non-finite values. */
void p3d_box_text_format_float (gfloat value,
    gchar buffer[P3D_BOX_TEXT_FLOAT_SIZE]);
/* The whole of @text as a float (C locale; "nan" and "inf" accepted);
 * FALSE for anything else, or a finite number beyond the float range. */
gboolean p3d_box_text_parse_float (const gchar * text, gfloat * value);

/* Comma-separated label names, label 0 first, spaces around names ignored;
 * "" is no names. NULL (and @why set) when a name is empty, is a number,
 * holds white space or appears twice. */
gchar **p3d_box_text_parse_labels (const gchar * text, gchar ** why);
/* The labels property of boxenc and boxparse: parses @text and, when it is
 * valid, replaces *@labels_text (a copy of @text, "" for NULL) and
 * *@labels (either may be NULL before) and returns TRUE; otherwise keeps
 * both, sets @why and returns FALSE. */
gboolean p3d_box_text_set_labels (const gchar * text, gchar ** labels_text,
    gchar *** labels, gchar ** why);

/* Writers: each appends one line, with its '\n'. @pts is
 * P3D_BOX_TEXT_NO_PTS for a frame without a timestamp. */
void p3d_box_text_append_json_frame (GString * out, guint64 frame,
    guint64 pts, guint count, P3dBoxKind kind);
void p3d_box_text_append_json_box3d (GString * out, const P3dcBox3d * box);
/* ... with its velocity, vx and vy in m/s, as "vx" and "vy". */
void p3d_box_text_append_json_box3d_velocity (GString * out,
    const P3dcBox3d * box, const gfloat velocity[2]);
void p3d_box_text_append_json_box2d (GString * out, const P3dcBox2d * box);
void p3d_box_text_append_kitti_box3d (GString * out, const P3dcBox3d * box,
    gchar ** labels);
void p3d_box_text_append_kitti_box2d (GString * out, const P3dcBox2d * box,
    gchar ** labels);

typedef enum
{
  P3D_BOX_LINE_BLANK,           /* nothing but white space */
  P3D_BOX_LINE_FRAME,           /* a JSON frame line */
  P3D_BOX_LINE_BOX,             /* a box */
  P3D_BOX_LINE_UNKNOWN_LABEL,   /* a KITTI line whose type is no label */
  P3D_BOX_LINE_ERROR,           /* malformed */
} P3dBoxLineType;

/**
 * P3dBoxLine:
 * @kind: a box's kind; for a frame line, its "type" (UNKNOWN when absent)
 * @frame: a frame line's "frame"
 * @pts: a frame line's "pts", or P3D_BOX_TEXT_NO_PTS
 * @count: a frame line's "count", or -1 when absent
 * @box3d: the box, when @kind is 3D
 * @box2d: the box, when @kind is 2D
 * @has_velocity: a JSON 3D box with "vx" and "vy"
 * @velocity: then those, in m/s; else zeros
 */
typedef struct
{
  P3dBoxKind kind;
  guint64 frame;
  guint64 pts;
  gint64 count;
  P3dcBox3d box3d;
  P3dcBox2d box2d;
  gboolean has_velocity;
  gfloat velocity[2];
} P3dBoxLine;

/* Readers of one line (NUL-terminated, without its end of line). @kind is
 * the stream's kind of box, or UNKNOWN to take it from the line (a JSON box
 * with "x1" is 2D, one with "x" 3D; KITTI lines are 3D unless told 2D). A
 * 3D JSON box may give "vx" and "vy" (both or neither). On ERROR, @why
 * gets the reason; on UNKNOWN_LABEL, the type name. */
P3dBoxLineType p3d_box_text_parse_json (const gchar * line, P3dBoxKind kind,
    P3dBoxLine * out, gchar ** why);
P3dBoxLineType p3d_box_text_parse_kitti (const gchar * line, P3dBoxKind kind,
    gchar ** labels, P3dBoxLine * out, gchar ** why);

G_END_DECLS

#endif /* __P3D_BOX_TEXT_H__ */
