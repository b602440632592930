/* Text for P3dResult codes: our own negative codes here, CUDA's from the
 * runtime (or a fixed text when built without CUDA). */
#include "result.h"
#include "runtime-private.h"

const char *
p3d_result_string (P3dResult result)
{
  switch (result) {
    case P3D_OK:
      return "no error";
    case P3D_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case P3D_ERROR_NO_CUDA:
      return "built without CUDA";
    case P3D_ERROR_OUT_OF_MEMORY:
      return "out of host memory";
    case P3D_ERROR_NOT_READY:
      return "work not finished yet";
    case P3D_ERROR_TOO_LARGE:
      return "input larger than supported";
    case P3D_ERROR_UNSUPPORTED:
      return "not supported by this build or machine";
    case P3D_ERROR_CUDNN:
      return "cuDNN call failed";
    default:
      break;
  }
  if (result > 0)
    return p3d_runtime_error_string (result);
  return "unknown error";
}
