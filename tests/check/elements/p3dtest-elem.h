/* Helpers shared by the element tests: buffers of tensors as the elements
 * exchange them, their bytes read back (from the host or the device) and
 * compared naming the first difference, pipelines run to an appsink, bus
 * messages, and files in a temporary directory. */
#ifndef ELEM_TEST_H
#define ELEM_TEST_H

#include <gst/gst.h>

#include "runtime.h"

G_BEGIN_DECLS

/* A buffer of one system memory per tensor, copies of @data. */
GstBuffer *elemtest_tensors_buffer (guint n_tensors,
    const gconstpointer * data, const gsize * sizes);

/* The same bytes in one memory, as a record that filesink wrote and
 * filesrc read back. */
GstBuffer *elemtest_packed_buffer (guint n_tensors,
    const gconstpointer * data, const gsize * sizes);

/* Fails unless the @size bytes at @actual equal @expected, naming @what,
 * the first differing byte and the 32-bit words that hold it on both
 * sides. */
void elemtest_assert_bytes (const void *actual, const void *expected,
    gsize size, const gchar * what);

/* Fails unless memory @index of @buffer, mapped on the host (a host copy
 * for CUDA memory), is @size bytes equal to @expected. */
void elemtest_assert_tensor (GstBuffer * buffer, guint index,
    const void *expected, gsize size, const gchar * what);

/* Tensor @index of @buffer through a host map (a download for CUDA
 * memory): a new copy of its bytes. */
GBytes *elemtest_host_bytes (GstBuffer * buffer, guint index);

/* Tensor @index of @buffer, which must be CUDA memory, copied from the
 * device on a stream of the test's own that waits for the work that wrote
 * it; what the next element's kernels would read, without the host map. */
GBytes *elemtest_device_bytes (GstBuffer * buffer, guint index);

/* A copy of @host's tensors in CUDA memory from @allocator, written on the
 * device by copies queued on @stream and not waited for, with @host's
 * timestamps; @staging (one pointer per tensor) holds the pinned sources,
 * to be freed with p3dc_cuda_host_free() once the stream has run them. */
GstBuffer *elemtest_device_copy (GstAllocator * allocator, GstBuffer * host,
    P3dcCudaStream stream, gpointer * staging);

/* What a pipeline ending in "appsink name=sink" produced. */
typedef struct
{
  GPtrArray *samples;           /* every sample the sink gave, in order */
  gchar *error;                 /* the first error (elemtest_message_text()),
                                 * or why the pipeline did not reach EOS;
                                 * NULL when it did */
  GstMessage *warning;          /* the first warning, or NULL */
} ElemtestRun;

/* Plays @pipeline, whose appsink is named "sink", until EOS, its first
 * error, or @timeout (GST_CLOCK_TIME_NONE: no limit), and fills @run. It
 * makes no check assertion, so that it may run on any thread, and leaves
 * @pipeline in the state it reached, for the caller to look at and then set
 * to NULL. */
void elemtest_play (GstElement * pipeline, ElemtestRun * run,
    GstClockTime timeout);

/* Builds @description (a gst-launch line with "appsink name=sink"), plays
 * it as elemtest_play() does without a time limit, and stops it; fails when
 * the line does not build. */
void elemtest_run (const gchar * description, ElemtestRun * run);

void elemtest_run_clear (ElemtestRun * run);

/* Runs @description as elemtest_run() does and returns its samples; fails
 * on an error. */
GPtrArray *elemtest_run_pipeline (const gchar * description);

/* The buffer and the caps of sample @index of @samples (what
 * elemtest_run_pipeline() returned, or an ElemtestRun's). */
GstBuffer *elemtest_sample_buffer (GPtrArray * samples, guint index);
GstCaps *elemtest_sample_caps (GPtrArray * samples, guint index);

/* The next message of @type on @bus, or NULL (messages of other types
 * before it are dropped). */
GstMessage *elemtest_pop (GstBus * bus, GstMessageType type);

/* The message and debug text of an error or warning, "message | debug". */
gchar *elemtest_message_text (GstMessage * message);

/* One of the strings an error must contain (a va_arg type). */
typedef const gchar *ElemtestNeedle;

/* Pops an error from @bus (waiting up to 10 s for it) and fails unless it
 * is @domain / @code and its text (message and debug) contains each of the
 * strings that follow, a NULL-terminated list. Returns the text (free
 * it). */
gchar *elemtest_expect_error (GstBus * bus, GQuark domain, gint code, ...)
    G_GNUC_NULL_TERMINATED;

/* As elemtest_expect_error(), for a message of @type: an error or a
 * warning. */
gchar *elemtest_expect_message (GstBus * bus, GstMessageType type,
    GQuark domain, gint code, ...) G_GNUC_NULL_TERMINATED;

/* Pushes a 64-byte buffer with @src_caps into a harness of @launch whose
 * sink asks for @sink_caps: the push must fail with NOT_NEGOTIATED and the
 * element post the error elemtest_expect_error() checks (@domain, @code),
 * whose text holds each of @needles (NULL-terminated; NULL for none).
 * Returns the text (free it). */
gchar *elemtest_expect_caps_refused (const gchar * launch,
    const gchar * src_caps, const gchar * sink_caps, GQuark domain, gint code,
    const gchar * const *needles);

/* Writes @contents to @name in @dir and returns the path (free it). */
gchar *elemtest_write_file (const gchar * dir, const gchar * name,
    const gchar * contents);

/* Writes the @size bytes at @data to @name in @dir and returns the path
 * (free it). */
gchar *elemtest_write_bytes (const gchar * dir, const gchar * name,
    gconstpointer data, gsize size);

/* Removes the files in @dir, then @dir. */
void elemtest_remove_dir (const gchar * dir);

G_END_DECLS

#endif /* ELEM_TEST_H */
