/* Answering a caps query; see p3dcapsquery.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "p3dcapsquery.h"

gboolean
p3d_answer_caps_query (GstQuery * query, GstCaps * caps)
{
  GstCaps *filter;

  gst_query_parse_caps (query, &filter);
  if (filter != NULL) {
    GstCaps *filtered = gst_caps_intersect_full (filter, caps,
        GST_CAPS_INTERSECT_FIRST);

    gst_caps_unref (caps);
    caps = filtered;
  }
  gst_query_set_caps_result (query, caps);
  gst_caps_unref (caps);
  return TRUE;
}
