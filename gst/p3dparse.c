/* What our GstBaseParse subclasses need besides the base class; see
 * p3dparse.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "p3dparse.h"

static gboolean
activate_push (GstPad * pad, GstObject * parent)
{
  return gst_pad_activate_mode (pad, GST_PAD_MODE_PUSH, TRUE);
}

static GstPadProbeReturn
see_input (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  P3dParseInputFunc input = (P3dParseInputFunc) user_data;
  GstBaseParse *parse = GST_BASE_PARSE (GST_PAD_PARENT (pad));
  GstFlowReturn flow = GST_FLOW_OK;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
    GstBufferList *list = GST_PAD_PROBE_INFO_BUFFER_LIST (info);
    guint i, n = gst_buffer_list_length (list);

    /* GstPad would hand the list's buffers to the chain function without
     * this probe: chain each, so that it comes here first */
    for (i = 0; i < n && flow == GST_FLOW_OK; i++)
      flow = gst_pad_chain (pad,
          gst_buffer_ref (gst_buffer_list_get (list, i)));
    gst_buffer_list_unref (list);
  } else if (input (parse, GST_PAD_PROBE_INFO_BUFFER (info), &flow)) {
    return GST_PAD_PROBE_OK;
  }
  GST_PAD_PROBE_INFO_FLOW_RETURN (info) = flow;
  return GST_PAD_PROBE_HANDLED;
}

void
p3d_parse_init (GstBaseParse * parse, P3dParseInputFunc input)
{
  GstPad *sinkpad = GST_BASE_PARSE_SINK_PAD (parse);

  gst_pad_set_activate_function (sinkpad, activate_push);
  if (input)
    gst_pad_add_probe (sinkpad, GST_PAD_PROBE_TYPE_BUFFER |
        GST_PAD_PROBE_TYPE_BUFFER_LIST | GST_PAD_PROBE_TYPE_PUSH, see_input,
        (gpointer) input, NULL);
}
