/* What the lidar parser fuzz targets share: a check of every sweep the
 * parser outputs (one memory of whole points of the caps' format, every
 * value finite), made on its src pad. */
#ifndef __P3D_FUZZ_LIDAR_H__
#define __P3D_FUZZ_LIDAR_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* Aborts on any sweep out of @parser that breaks those promises. */
void fuzz_lidar_watch_sweeps (GstElement * parser);

/* A file in a temporary folder of the process holding @text (the folder
 * is removed at exit); returns its path (owned by the helper, valid until
 * the next call). */
const gchar *fuzz_lidar_file (const gchar * name, const gchar * text,
    gsize length);

G_END_DECLS

#endif /* __P3D_FUZZ_LIDAR_H__ */
