/* ousterparse: Ouster lidar packets (one per buffer) and the sensor's
 * metadata -> application/x-point-cloud sweeps, one per frame. */
#ifndef __P3D_OUSTER_PARSE_H__
#define __P3D_OUSTER_PARSE_H__

#include "p3dlidarparse.h"
#include "ousterparse-decoder.h"

G_BEGIN_DECLS

#define P3D_TYPE_OUSTER_PARSE (p3d_ouster_parse_get_type ())
G_DECLARE_FINAL_TYPE (P3dOusterParse, p3d_ouster_parse, P3D, OUSTER_PARSE,
    P3dLidarParse);

struct _P3dOusterParse
{
  P3dLidarParse parent;

  /* properties, under the object lock */
  gchar *metadata;

  /* streaming: from the metadata file at start */
  P3dOusterMetadata info;
  P3dOusterDecoder *decoder;
  gsize packet_size;
  guint packets_per_frame;
  gsize grid_points;
  /* one bit per grid point: the pixels of the open frame with a return */
  guint64 *valid;
  gsize valid_words;

  /* the open frame: its id, the packets that came (by index in the
   * frame), its time origin (the first column with data), the frame's
   * grid (the open sweep's points) */
  gboolean have_frame;
  gboolean first_frame;
  guint frame_id;
  gboolean frame_partial;
  gboolean frame_discont;
  guint8 *received;
  guint n_received;
  guint last_index;
  gboolean have_t0;
  guint64 t0;
  guint64 last_time;
  gfloat *grid;
};

GST_ELEMENT_REGISTER_DECLARE (ousterparse);

G_END_DECLS

#endif /* __P3D_OUSTER_PARSE_H__ */
