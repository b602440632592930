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
#include "gstboxparse.h"
#include "gstnms.h"
#include "gstpcdparse.h"
#include "gstpillarencode.h"
#include "gstpillarfeat.h"
#include "gstpointcloudparse.h"
#include "gstpointcloudtestsrc.h"
#include "gstvoxelize.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  static const struct
  {
    const gchar *name;
      GType (*get_type) (void);
  } elements[] = {
    {"voxelize", p3d_voxelize_get_type},
    {"pillarfeat", p3d_pillar_feat_get_type},
    {"pillarencode", p3d_pillar_encode_get_type},
    {"bevdetect", p3d_bev_detect_get_type},
    {"nms", p3d_nms_get_type},
    {"bevpool", p3d_bev_pool_get_type},
    {"pointcloudtestsrc", p3d_point_cloud_test_src_get_type},
    {"pcdparse", p3d_pcd_parse_get_type},
    {"pointcloudparse", p3d_point_cloud_parse_get_type},
    {"boxenc", p3d_box_enc_get_type},
    {"boxparse", p3d_box_parse_get_type},
    {"bevrender", p3d_bev_render_get_type},
  };
  gboolean ok = TRUE;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (elements); i++)
    ok &= gst_element_register (plugin, elements[i].name, GST_RANK_NONE,
        elements[i].get_type ());
  return ok;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, perception,
    "3D perception on CUDA: lidar voxelization, pillar features, "
    "camera-to-BEV pooling, NMS, with C reference paths",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
