/* Helpers of the pcdparse tests: a small PCD writer (every storage type,
 * numeric type, version, CRLF, organized clouds) and the points the element
 * should output for what it wrote. */
#ifndef PCD_TEST_H
#define PCD_TEST_H

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct
{
  const gchar *name;
  gchar type;
  guint size;
  guint count;
} PcdTestField;

typedef struct
{
  const PcdTestField *fields;
  guint n_fields;
  guint n_points;
  /* WIDTH x HEIGHT; height 1 for an unorganized cloud */
  guint width;
  guint height;
  /* n_points x values_per_point: every field's elements, in order; integer
   * values are whole numbers within 2^53, so a double holds them exactly */
  guint values_per_point;
  gdouble *values;
} PcdTestCloud;

typedef enum
{
  PCDTEST_ASCII,
  PCDTEST_BINARY,
  PCDTEST_COMPRESSED,
} PcdTestStorage;

/* The DATA keyword of each storage. */
extern const gchar *const pcdtest_storage_names[];

typedef struct
{
  PcdTestStorage storage;
  /* "0.7" (with VIEWPOINT), ".5" (COLUMNS, no VIEWPOINT) */
  const gchar *version;
  gboolean crlf;
  /* ASCII: the last line ends without a newline */
  gboolean no_final_newline;
} PcdTestOptions;

/* A cloud of @n_points random values of @fields (which it keeps), the
 * same for the same @seed. */
PcdTestCloud *pcdtest_cloud_new (const PcdTestField * fields, guint n_fields,
    guint n_points, guint64 seed);
void pcdtest_cloud_free (PcdTestCloud * cloud);
/* Element 0 of field @f of point @p (the others follow it). */
gdouble *pcdtest_cloud_value (PcdTestCloud * cloud, guint p, guint f);

/* The PCD file of @cloud. */
GByteArray *pcdtest_write (PcdTestCloud * cloud, const PcdTestOptions * o);

/* The points of @cloud in @format, without the non-finite ones when @drop:
 * each channel is element 0 of its field rounded to float32, or 0 when the
 * file has no such field (g_free() it). */
gfloat *pcdtest_expected (PcdTestCloud * cloud, const gchar * format,
    gboolean drop, guint * n_out);

/* Asserts @buffer holds exactly @n_points points of @channels floats from
 * @expected (NaN matching NaN), naming the first float that differs; CUDA
 * memory is read through a host map. */
void pcdtest_assert_points (GstBuffer * buffer, const gfloat * expected,
    guint n_points, guint channels, const gchar * what);
void pcdtest_assert_cloud (GstBuffer * buffer, PcdTestCloud * cloud,
    const gchar * format, gboolean drop, const gchar * what);

G_END_DECLS

#endif /* PCD_TEST_H */
