/* gst-perception: what cameratestsrc and boxoverlay share about their
 * calibration file: loading one camera of it, with errors an element can
 * post. */
#ifndef __P3D_CAMERA_FILE_H__
#define __P3D_CAMERA_FILE_H__

#include <gst/gst.h>

#include "p3dcamera.h"

G_BEGIN_DECLS

/* Camera @index of the calibration file @path (the element's "calibration"
 * and "camera" properties) into @camera, its name into *@name (free it);
 * FALSE after posting an element error on @element that names the
 * property, the file and what is wrong: no file given, a file that does not
 * exist or cannot be read, content that is not a calibration
 * (docs/calibration.md), an index past the file's cameras, or matrices
 * that are not a pinhole camera and a rigid camera-to-lidar transform. */
gboolean p3d_camera_file_load (GstElement * element, const gchar * path,
    guint index, P3dCamera * camera, gchar ** name);

G_END_DECLS

#endif /* __P3D_CAMERA_FILE_H__ */
