/* Text for P3dcResult codes: our own negative codes here, CUDA's from the
 * runtime (or a fixed text when built without CUDA). */
#include "result.h"
#include "runtime-private.h"

const char *
p3dc_result_string (P3dcResult result)
{
  switch (result) {
    case P3DC_OK:
      return "no error";
    case P3DC_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case P3DC_ERROR_NO_CUDA:
      return "built without CUDA";
    case P3DC_ERROR_OUT_OF_MEMORY:
      return "out of host memory";
    case P3DC_ERROR_NOT_READY:
      return "work not finished yet";
    case P3DC_ERROR_TOO_LARGE:
      return "input larger than supported";
    case P3DC_ERROR_UNSUPPORTED:
      return "not supported by this build or machine";
    case P3DC_ERROR_CUDNN:
      return "cuDNN call failed";
    default:
      break;
  }
  if (result > 0)
    return p3dc_runtime_error_string (result);
  return "unknown error";
}
