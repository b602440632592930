/* gst-perception: answering a caps query, for the elements that answer one
 * themselves (the parsers, boxoverlay's video pad). */
#ifndef __P3D_CAPS_QUERY_H__
#define __P3D_CAPS_QUERY_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* Answers the caps query @query with @caps (taken), filtered by the
 * query's filter in the filter's order. Returns TRUE. */
gboolean p3d_answer_caps_query (GstQuery * query, GstCaps * caps);

G_END_DECLS

#endif /* __P3D_CAPS_QUERY_H__ */
