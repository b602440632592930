/* Helpers shared by the boxenc and boxparse tests: box buffers as the
 * elements exchange them, random records, and record comparison that names
 * the first differing field. Bus messages are elemtest's. */
#ifndef BOX_TEST_H
#define BOX_TEST_H

#include <gst/gst.h>

#include "boxes.h"
#include "p3dtest-elem.h"
#include "p3dtest.h"

G_BEGIN_DECLS

/* A frame of @count records of @record_size bytes, in a buffer of two
 * system memories (records zero-padded to @max_boxes, then the count). */
GstBuffer *boxtest_buffer (const void *records, guint count, guint max_boxes,
    gsize record_size);

/* Checks that @buffer is such a frame (sizes, zero padding) and copies its
 * records into @records (room for @max_boxes); returns the count. */
guint boxtest_read (GstBuffer * buffer, gsize record_size, guint max_boxes,
    void *records);

/* The bytes of @buffer as a NUL-terminated string. */
gchar *boxtest_text (GstBuffer * buffer);

/* Random records whose floats cover every kind of float: random bit
 * patterns (tiny, huge, subnormal), ordinary values, zeros of both signs,
 * the extremes and, when @non_finite, NaN and infinities. */
gfloat boxtest_random_float (P3dTestRng * rng, gboolean non_finite);
void boxtest_random_3d (P3dTestRng * rng, P3dcBox3d * box,
    gboolean non_finite);
void boxtest_random_2d (P3dTestRng * rng, P3dcBox2d * box,
    gboolean non_finite);

/* Bit for bit, except that any NaN equals any NaN (text keeps no payload). */
gboolean boxtest_float_equal (gfloat a, gfloat b);
/* Fails naming the frame, the box, the field and both values. */
void boxtest_assert_3d_equal (const P3dcBox3d * expected,
    const P3dcBox3d * actual, guint frame, guint index);
void boxtest_assert_2d_equal (const P3dcBox2d * expected,
    const P3dcBox2d * actual, guint frame, guint index);

G_END_DECLS

#endif /* BOX_TEST_H */
