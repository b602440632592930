/* The PCD reader core: the header parser, the scanner that says where one
 * file ends in a stream of bytes, and the decoder from any PCD field layout
 * to the float32 channels of application/x-point-cloud. GLib only, so that it
 * is tested and fuzzed without GStreamer; the pcdparse element wraps it.
 *
 * Supported: PCD v0.5 and v0.7 headers (COLUMNS for FIELDS, the default SIZE
 * 4, TYPE F, COUNT 1, POINTS WIDTH*HEIGHT and VIEWPOINT of old files, comment
 * and blank lines, CRLF), DATA ascii, binary (row-major records) and
 * binary_compressed (PCL's layout: two little-endian uint32, the compressed
 * and uncompressed sizes, then LZF data that decompresses to column-major
 * fields). Multi-byte values are little-endian. */
#ifndef P3D_PCD_READER_H
#define P3D_PCD_READER_H

#include <glib.h>

G_BEGIN_DECLS

#define P3D_PCD_ERROR (p3d_pcd_error_quark())
GQuark p3d_pcd_error_quark(void);

/* Every message names the position and the value: "line N" (header and
 * ASCII lines, from 1), "byte N" (offset in the file, from 0), "point N"
 * (from 0, blank lines not counted). The position is also in the error
 * itself: p3d_pcd_error_get_position(). */
typedef enum {
  /* a header line that cannot be read: unknown keyword, not a number,
   * missing or duplicate line, no DATA line */
  P3D_PCD_ERROR_HEADER,
  /* header lines that disagree with each other (SIZE, TYPE or COUNT entries
   * against FIELDS, POINTS against WIDTH*HEIGHT) or with the sizes that
   * binary_compressed data announces */
  P3D_PCD_ERROR_INCONSISTENT,
  /* an unknown TYPE, or a SIZE that does not go with its TYPE */
  P3D_PCD_ERROR_TYPE,
  /* sizes that do not fit in 64 bits, or a point larger than 4 GiB */
  P3D_PCD_ERROR_TOO_LARGE,
  /* fewer bytes or lines of data than the header announces */
  P3D_PCD_ERROR_TRUNCATED,
  /* data that cannot be decoded: ASCII values, LZF */
  P3D_PCD_ERROR_DATA,
  /* the file has no x, y or z field */
  P3D_PCD_ERROR_FIELD,
  /* a channel string other than distinct letters of "xyzitr" with x, y and
   * z among them (a caller's error, not the file's) */
  P3D_PCD_ERROR_FORMAT,
} P3dPcdError;

/* A position that an error does not have. */
#define P3D_PCD_NO_POSITION G_MAXUINT64

typedef struct {
  /* line from 1 (header and ASCII lines, padding lines before the header
   * counted), point from 0 (an ASCII point: blank lines not counted), byte
   * offset in the file from 0; P3D_PCD_NO_POSITION where the error has no
   * such position (a point always has its line) */
  guint64 line;
  guint64 point;
  guint64 byte;
  /* the message without its position ("TYPE has 3 entries but FIELDS has
   * 4"); owned by the error */
  const gchar *reason;
} P3dPcdPosition;

/* Where in the file the reader's @error was found. FALSE when @error is not
 * one of the reader's. */
gboolean p3d_pcd_error_get_position(const GError *error,
                                    P3dPcdPosition *position);

/* A header line longer than this, or a header without a DATA line within
 * this many bytes, is refused: the bytes are not a PCD file. */
#define P3D_PCD_MAX_HEADER_SIZE 65536

/* NUL bytes and blank lines before a header are padding that belongs to the
 * file after them (older PCL versions leave up to a page of zeros after
 * binary_compressed data); more than this many is refused. */
#define P3D_PCD_MAX_PADDING (1 << 20)

typedef enum {
  P3D_PCD_DATA_ASCII,
  P3D_PCD_DATA_BINARY,
  P3D_PCD_DATA_BINARY_COMPRESSED,
} P3dPcdData;

typedef struct {
  gchar name[64];
  /* bytes of one element: 1, 2, 4 or 8 (4 or 8 for F) */
  guint size;
  /* 'I' signed integer, 'U' unsigned integer, 'F' IEEE floating point */
  gchar type;
  /* elements per point (at least 1); the decoder reads element 0 */
  guint32 count;
  /* byte offset of element 0 in a binary record; in binary_compressed data
   * the field's column starts at points * offset */
  gsize offset;
} P3dPcdField;

typedef struct {
  /* as written after VERSION (".7", "0.7", ".5"...), "" when absent */
  gchar version[8];
  guint n_fields;
  P3dPcdField *fields;
  /* bytes of one binary record: the sum of size * count (at most 4 GiB) */
  gsize point_stride;
  guint64 width, height, points;
  /* tx ty tz qw qx qy qz; 0 0 0 1 0 0 0 when absent */
  gdouble viewpoint[7];
  P3dPcdData data;
  /* bytes from the start of the file through the end of the DATA line */
  gsize header_size;
  /* lines in those bytes: ASCII data lines are numbered from
   * header_lines + 1 */
  gsize header_lines;
} P3dPcdHeader;

/* Parses the header at the start of @bytes, which hold the whole file or at
 * least its header through the newline of the DATA line. @header need not be
 * initialized; on success it owns memory that p3d_pcd_header_clear() frees,
 * on failure it is left cleared. */
gboolean p3d_pcd_header_parse(const guint8 *bytes, gsize size,
                              P3dPcdHeader *header, GError **error);

/* Frees what a parsed header owns and zeroes it; safe on a zeroed header and
 * when called twice. */
void p3d_pcd_header_clear(P3dPcdHeader *header);

typedef enum {
  /* a file may start here but is not complete yet */
  P3D_PCD_NEED_MORE,
  /* the first *file_size bytes hold one complete file */
  P3D_PCD_COMPLETE,
  /* these bytes can never start a valid PCD file; the error says why */
  P3D_PCD_INVALID,
} P3dPcdScan;

/* Says whether @bytes, the bytes received so far, start with one complete
 * PCD file, without ever reading past @size. A file spans its header and its
 * data: points * stride bytes for binary, 8 + the compressed size for
 * binary_compressed, through the end of the POINTS-th non-blank line for
 * ASCII (a '#' on an ASCII data line starts a comment; a line with nothing
 * else is blank). Padding before the header (blank lines, NUL bytes: see
 * P3D_PCD_MAX_PADDING) and blank lines between ASCII points belong to the
 * file; so the zeros that old PCL versions leave after binary_compressed
 * data are the start of the next file, or nothing at the end of the stream.
 *
 * @at_eos: no byte will follow @bytes. Then the last ASCII line may end
 * without a newline, and an incomplete file is INVALID with
 * P3D_PCD_ERROR_TRUNCATED; NEED_MORE is returned only when @bytes are empty
 * or only padding and comment lines (PCL reads a "# ..." line after the
 * last point), i.e. nothing is left.
 *
 * @header: (nullable): filled on COMPLETE (free it with
 * p3d_pcd_header_clear()), zeroed otherwise.
 * @file_size: on COMPLETE the size of the file; on NEED_MORE a lower bound
 * of the size of a valid file (one whose ASCII lines hold the values its
 * header announces), always greater than @size, so that a caller can wait
 * for that many bytes before scanning again; 0 on INVALID. */
P3dPcdScan p3d_pcd_scan(const guint8 *bytes, gsize size, gboolean at_eos,
                        P3dPcdHeader *header, gsize *file_size, GError **error);

/* What p3d_pcd_scan_progress() tells on NEED_MORE (all zero otherwise). */
typedef struct {
  /* the header is complete: its storage, points and size */
  gboolean have_header;
  P3dPcdData data;
  guint64 points;
  gsize header_size;
  /* ASCII: point lines still missing, and the end of the last complete
   * line (the file cannot be complete before that many more lines end) */
  guint64 lines_missing;
  gsize lines_end;
} P3dPcdProgress;

/* As p3d_pcd_scan(), and on NEED_MORE fills @progress (nullable), so that
 * a caller waits for what is missing instead of scanning again too soon. */
P3dPcdScan p3d_pcd_scan_progress(const guint8 *bytes, gsize size,
                                 gboolean at_eos, P3dPcdHeader *header,
                                 gsize *file_size, P3dPcdProgress *progress,
                                 GError **error);

/* Bytes of padding (NUL bytes, blank lines) at the start of @bytes: what
 * p3d_pcd_scan() lets come before a header. */
gsize p3d_pcd_padding_size(const guint8 *bytes, gsize size);

/* Counts ASCII point lines as the scanner counts them (a line with
 * something before its first '#' other than white space), over bytes given
 * piece by piece: a caller learns when a file's last line may have arrived
 * by looking at each new byte once. */
typedef struct {
  guint64 lines;
  gboolean has_values;
  gboolean in_comment;
} P3dPcdLineCounter;

void p3d_pcd_line_counter_init(P3dPcdLineCounter *counter);
void p3d_pcd_line_counter_feed(P3dPcdLineCounter *counter, const guint8 *bytes,
                               gsize size);

/* Checks a point-cloud format string ("xyz", "xyzi", "xyzit", "xyzir"...):
 * distinct letters of "xyzitr" among which x, y and z. */
gboolean p3d_pcd_format_is_valid(const gchar *channels, GError **error);

/* Decodes the points of the file in @bytes (its first @size bytes, from the
 * start of the header that @header was parsed from; bytes after the file are
 * ignored) into float32 points of the channels named by @channels, in that
 * order, row after row. Each letter takes element 0 of a field by name, case
 * insensitively: x, y, z; i: "intensity", "i", "reflectance", "remission";
 * t: "t", "time", "timestamp"; r: "ring", "r". A missing x, y or z field is
 * an error; a missing i, t or r field gives 0. Integer and float64 values
 * are converted to the nearest float32; ASCII decimals are read as strtod()
 * reads them, then rounded to float32 ("nan", "inf" accepted).
 *
 * @drop_nonfinite: leave out points whose x, y or z is NaN or infinite, and
 * count them in @n_dropped; otherwise keep them.
 * @points: where the points go; @capacity: how many floats it holds, at
 * least header->points * strlen (@channels) (call p3d_pcd_scan() first to be
 * sure the data is there before allocating that much).
 * @n_points: (out): points written; @n_dropped: (out) (optional): points
 * left out; @n_overflow: (out) (optional): points of which a channel holds
 * a finite value that no float32 holds (ASCII 1e39, an F8 1e300): it
 * became infinite, so such points are among the dropped ones with
 * @drop_nonfinite. The same values give the same floats in every storage
 * type. */
gboolean p3d_pcd_decode_into(const P3dPcdHeader *header, const guint8 *bytes,
                             gsize size, const gchar *channels,
                             gboolean drop_nonfinite, gfloat *points,
                             gsize capacity, gsize *n_points, gsize *n_dropped,
                             gsize *n_overflow, GError **error);

/* As p3d_pcd_decode_into(), into a new array (g_free() it; NULL when no
 * point is left). It checks that the data can be present in @size bytes
 * before allocating. */
gboolean p3d_pcd_decode(const P3dPcdHeader *header, const guint8 *bytes,
                        gsize size, const gchar *channels,
                        gboolean drop_nonfinite, gfloat **points,
                        gsize *n_points, gsize *n_dropped, GError **error);

G_END_DECLS

#endif /* P3D_PCD_READER_H */
