/* gst-perception: what our GstBaseParse subclasses (pcdparse, boxparse,
 * the lidar parsers) need besides the base class, written once.
 *
 * A parser collects its frames in handle_frame, which in push mode always
 * gets every byte received and not yet consumed: that ends where the last
 * input buffer ends. A parser that consumes all it is given (a frame per
 * buffer, whole files per buffer) therefore sees each input buffer alone,
 * and takes its end as the end of the input. What handle_frame cannot see
 * is an input buffer as it arrives: an empty one (the base class never
 * calls handle_frame for no bytes), its timestamp, or that new bytes came
 * at all while a frame waits for more than the minimum frame size. An
 * input function sees each input buffer before the base class queues it.
 *
 * The sink pad reads in push mode only: GstBaseParse would pull from a
 * seekable upstream, which gives these parsers no input buffers, and at
 * the end of an input without frames would post its own error before the
 * element can say what the input held.
 *
 * Their src pads also answer alike, so that is here once too: the caps
 * query, and the point-cloud caps that pcdparse and the lidar parsers
 * (p3dlidarparse) choose with downstream before their first frame.
 */
#ifndef __P3D_PARSE_H__
#define __P3D_PARSE_H__

#include <gst/base/gstbaseparse.h>

#include "p3dperception.h"

G_BEGIN_DECLS

/* Sees @buffer before the base class does. TRUE lets the base class have
 * it; FALSE when the function took it (and unreffed it), *@flow then being
 * what upstream gets. Runs in the streaming thread, the stream lock
 * held. */
typedef gboolean (*P3dParseInputFunc) (GstBaseParse * parse,
    GstBuffer * buffer, GstFlowReturn * flow);

/* For the instance init of a GstBaseParse subclass: push mode only, and
 * @input (NULL: none) sees each input buffer first. A buffer list is
 * chained buffer by buffer, so that @input sees each. */
void p3d_parse_init (GstBaseParse * parse, P3dParseInputFunc input);

/* Chooses the point-cloud caps to output from @ours (taken) with
 * downstream: downstream's first choice, @format preferred where it leaves
 * the format open, the lowest framerate where @framerate and it leaves
 * that open. Caps other than *@caps are sent; then *@caps, *@info and
 * *@cuda describe them, and *@new_pool says whether the format or memory
 * changed from the previous ones (the pool must be replaced). FALSE after
 * an error, @offers (the properties that fix @ours) its detail when
 * downstream takes none of @ours. */
gboolean p3d_parse_negotiate_point_cloud (GstBaseParse * parse,
    GstCaps * ours, const gchar * format, gboolean framerate,
    const gchar * offers, GstCaps ** caps, P3dPointCloudInfo * info,
    gboolean * cuda, gboolean * new_pool);

G_END_DECLS

#endif /* __P3D_PARSE_H__ */
