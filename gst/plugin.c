/* The plugin "perception": registers every element, on every machine.
 * Elements look for a CUDA device when they start, never here, so
 * gst-inspect lists the same elements with or without a GPU and the
 * registry never caches an empty plugin. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>

#include "gstbevdetect.h"
#include "gstbevpool.h"
#include "gstbevrender.h"
#include "gstboxenc.h"
#include "gstboxoverlay.h"
#include "gstboxparse.h"
#include "gstcamencode.h"
#include "gstcameratestsrc.h"
#include "gstnms.h"
#include "gstousterparse.h"
#include "gstpcdparse.h"
#include "gstpillarencode.h"
#include "gstpillarfeat.h"
#include "gstpointcloudparse.h"
#include "gstpointcloudtestsrc.h"
#include "gstvelodyneparse.h"
#include "gstvoxelize.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ok = FALSE;

  /* one element failing to register leaves the others usable */
  ok |= GST_ELEMENT_REGISTER (voxelize, plugin);
  ok |= GST_ELEMENT_REGISTER (pillarfeat, plugin);
  ok |= GST_ELEMENT_REGISTER (pillarencode, plugin);
  ok |= GST_ELEMENT_REGISTER (bevdetect, plugin);
  ok |= GST_ELEMENT_REGISTER (nms, plugin);
  ok |= GST_ELEMENT_REGISTER (bevpool, plugin);
  ok |= GST_ELEMENT_REGISTER (camencode, plugin);
  ok |= GST_ELEMENT_REGISTER (pointcloudtestsrc, plugin);
  ok |= GST_ELEMENT_REGISTER (pcdparse, plugin);
  ok |= GST_ELEMENT_REGISTER (pointcloudparse, plugin);
  ok |= GST_ELEMENT_REGISTER (velodyneparse, plugin);
  ok |= GST_ELEMENT_REGISTER (ousterparse, plugin);
  ok |= GST_ELEMENT_REGISTER (boxenc, plugin);
  ok |= GST_ELEMENT_REGISTER (boxparse, plugin);
  ok |= GST_ELEMENT_REGISTER (bevrender, plugin);
  ok |= GST_ELEMENT_REGISTER (cameratestsrc, plugin);
  ok |= GST_ELEMENT_REGISTER (boxoverlay, plugin);

  return ok;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, perception,
    "3D perception on CUDA: lidar voxelization, pillar features, "
    "camera-to-BEV pooling, NMS, with C reference paths",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
