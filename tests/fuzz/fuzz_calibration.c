/* libFuzzer target for bevpool's calibration loader (gst/bevpool-calibration.c):
 * the input is a calibration file's bytes. A file is refused with an error
 * in the calibration domain that GStreamer can print, or loaded with at
 * least one camera, a name for each, and every matrix element finite (the
 * bevpool element and its geometry trust that). Any broken promise aborts;
 * AddressSanitizer and UndefinedBehaviorSanitizer catch the rest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bevpool-calibration.h"

#define CHECK(cond) \
  G_STMT_START { \
    if (!(cond)) { \
      fprintf (stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, \
          #cond); \
      abort (); \
    } \
  } G_STMT_END

static void
check_matrix (const double *m)
{
  guint i;

  for (i = 0; i < 16; i++)
    CHECK (isfinite (m[i]));
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  GError *error = NULL;
  P3dBevCalibration *calibration;
  guint i;

  calibration = p3d_bev_calibration_parse ((const gchar *) data,
      (gssize) size, "fuzz.json", &error);
  CHECK ((calibration == NULL) == (error != NULL));
  if (error) {
    CHECK (error->domain == P3D_BEV_CALIBRATION_ERROR);
    CHECK (error->message[0] != '\0');
    CHECK (g_utf8_validate (error->message, -1, NULL));
    g_error_free (error);
    return 0;
  }
  CHECK (calibration->n_cameras > 0);
  for (i = 0; i < calibration->n_cameras; i++) {
    CHECK (calibration->names[i] != NULL);
    CHECK (g_utf8_validate (calibration->names[i], -1, NULL));
    check_matrix (calibration->cameras[i].intrinsics);
    check_matrix (calibration->cameras[i].camera_to_lidar);
    check_matrix (calibration->cameras[i].img_aug);
  }
  p3d_bev_calibration_free (calibration);
  return 0;
}
