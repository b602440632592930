/* gst-perception: what pillarencode and bevdetect share about their
 * weights file: loading it with errors an element can post. */
#ifndef __P3D_MODEL_FILE_H__
#define __P3D_MODEL_FILE_H__

#include <gst/gst.h>

#include "p3dmodel.h"

G_BEGIN_DECLS

/* The model in the safetensors file @path, or NULL after posting an
 * element error on @element that names the file and what is wrong with
 * it (no path, unreadable, not safetensors, a tensor missing or of the
 * wrong shape, a bad configuration). */
P3dModel *p3d_model_file_load (GstElement * element,
    const gchar * path);

/* p3d_model_file_load() of the path in @element's weights property
 * *@weights, read under the object lock. */
P3dModel *p3d_model_file_load_property (GstElement * element,
    gchar * const *weights);

/* Frees *@model under the object lock: caps queries read the model from
 * other threads. */
void p3d_model_file_clear (GstElement * element, P3dModel ** model);

G_END_DECLS

#endif /* __P3D_MODEL_FILE_H__ */
