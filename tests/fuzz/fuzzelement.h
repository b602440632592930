/* The shared part of the element fuzz targets: an input reader that turns
 * the fuzzer's bytes into choices, buffers of tensors whose sizes match the
 * caps or not, and one run of appsrc ! element ! appsink that must end in
 * EOS or a clear error, with outputs sized as their caps say. */
#ifndef __P3D_FUZZ_ELEMENT_H__
#define __P3D_FUZZ_ELEMENT_H__

#include <gst/gst.h>

#include "p3dperception.h"

G_BEGIN_DECLS

typedef struct
{
  const guint8 *data;
  gsize size;
  gsize pos;
} FuzzReader;

void fuzz_reader_init (FuzzReader * reader, const guint8 * data, gsize size);
/* The next byte, 0 once the input is spent. */
guint8 fuzz_u8 (FuzzReader * reader);
/* A value in [0, @n), from one or two bytes. */
guint fuzz_below (FuzzReader * reader, guint n);
/* A float32 of any bits (NaN, infinities and subnormals included) half of
 * the time, else a small finite one, so both kinds of values are common. */
gfloat fuzz_float (FuzzReader * reader);

/* A buffer for @layout: one time in four a random number of memories of
 * random sizes (inconsistent with the caps), else the layout's tensors;
 * the contents come from the input, floats through fuzz_float() where
 * @float_tensors has bit i set for tensor i. */
GstBuffer *fuzz_buffer (FuzzReader * reader, const P3dTensorLayout * layout,
    guint float_tensors);

/* Runs @element (a floating reference, taken) between an appsrc offering
 * @caps (taken) on @sink_pad (a request pad template name or "sink") and
 * an appsink, pushing the buffers of @make_buffer until it returns NULL,
 * then EOS. Aborts when the run neither ends nor posts an error within a
 * few seconds, when an error has no text, or when an output buffer is not
 * sized as its caps say. */
typedef GstBuffer *(*FuzzMakeBuffer) (FuzzReader * reader, gpointer user_data,
    guint index);
void fuzz_run_element (GstElement * element, const gchar * sink_pad,
    GstCaps * caps, FuzzReader * reader, FuzzMakeBuffer make_buffer,
    gpointer user_data);

/* gst_init() once, with the registry in a temporary file. */
void fuzz_gst_init (void);

G_END_DECLS

#endif /* __P3D_FUZZ_ELEMENT_H__ */
