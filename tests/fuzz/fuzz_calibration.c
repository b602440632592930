/* libFuzzer target for the calibration loader of bevpool, cameratestsrc
 * and boxoverlay (gst/p3dcalibration.c): the input is a calibration file's
 * bytes. A file is refused with an error in the calibration domain that
 * GStreamer can print, or loaded with at least one camera, a name for each,
 * every matrix element finite (the elements and bevpool's geometry trust
 * that) and an image size of 0 x 0 or within 1 .. 16384 on both sides. Any
 * broken promise aborts; AddressSanitizer and UndefinedBehaviorSanitizer
 * catch the rest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "p3dcalibration.h"

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
  P3dCalibration *calibration;
  guint i;

  calibration = p3d_calibration_parse ((const gchar *) data,
      (gssize) size, "fuzz.json", &error);
  CHECK ((calibration == NULL) == (error != NULL));
  if (error) {
    CHECK (error->domain == P3D_CALIBRATION_ERROR);
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
    if (calibration->image_sizes[i].width == 0)
      CHECK (calibration->image_sizes[i].height == 0);
    else
      CHECK (calibration->image_sizes[i].width <=
          P3D_CALIBRATION_MAX_IMAGE_SIDE
          && calibration->image_sizes[i].height >= 1
          && calibration->image_sizes[i].height <=
          P3D_CALIBRATION_MAX_IMAGE_SIDE);
  }
  p3d_calibration_free (calibration);
  return 0;
}
