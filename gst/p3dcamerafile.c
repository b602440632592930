/* gst-perception: loading one camera of a calibration file for
 * cameratestsrc and boxoverlay; see p3dcamerafile.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "p3dcamerafile.h"

gboolean
p3d_camera_file_load (GstElement * element, const gchar * path, guint index,
    P3dCamera * camera, gchar ** name)
{
  P3dCalibration *calibration;
  GError *error = NULL;
  gchar *why = NULL;
  gboolean ok;

  *name = NULL;
  if (path == NULL || path[0] == '\0') {
    GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
        ("No calibration: set the \"calibration\" property to a JSON file "
            "(docs/calibration.md)"), (NULL));
    return FALSE;
  }
  calibration = p3d_calibration_load (path, &error);
  /* as filesrc and the decoders post them: a file that is not there, one
   * that cannot be read, and content that cannot be used */
  if (calibration == NULL) {
    if (g_error_matches (error, P3D_CALIBRATION_ERROR,
            P3D_CALIBRATION_ERROR_NOT_FOUND))
      GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
          ("Calibration file %s (property calibration) does not exist",
              path), ("%s", error->message));
    else if (g_error_matches (error, P3D_CALIBRATION_ERROR,
            P3D_CALIBRATION_ERROR_READ))
      GST_ELEMENT_ERROR (element, RESOURCE, OPEN_READ,
          ("Cannot read calibration file %s (property calibration)", path),
          ("%s", error->message));
    else
      GST_ELEMENT_ERROR (element, STREAM, DECODE,
          ("Cannot use calibration file %s (property calibration): %s", path,
              error->message), (NULL));
    g_error_free (error);
    return FALSE;
  }
  if (index >= calibration->n_cameras) {
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
        ("Invalid property camera: %u, but calibration file %s has %u "
            "camera%s (0 to %u)", index, path, calibration->n_cameras,
            calibration->n_cameras == 1 ? "" : "s",
            calibration->n_cameras - 1), (NULL));
    p3d_calibration_free (calibration);
    return FALSE;
  }
  ok = p3d_camera_init (camera, &calibration->cameras[index],
      &calibration->image_sizes[index], &why);
  if (!ok) {
    GST_ELEMENT_ERROR (element, STREAM, DECODE,
        ("Camera %u (%s) of calibration file %s cannot be used: %s", index,
            calibration->names[index], path, why), (NULL));
    g_free (why);
  } else {
    *name = g_strdup (calibration->names[index]);
  }
  p3d_calibration_free (calibration);
  return ok;
}
