/* What our GstBaseParse subclasses need besides the base class; see
 * p3dparse.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "p3dparse.h"

GST_DEBUG_CATEGORY_STATIC (p3d_parse_debug);
#define GST_CAT_DEFAULT p3d_parse_debug

static void
debug_init (void)
{
  static gsize done = 0;

  if (g_once_init_enter (&done)) {
    GST_DEBUG_CATEGORY_INIT (p3d_parse_debug, "p3dparse", 0,
        "gst-perception parsers' shared caps negotiation");
    g_once_init_leave (&done, 1);
  }
}

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

gboolean
p3d_parse_negotiate_point_cloud (GstBaseParse * parse, GstCaps * ours,
    const gchar * format, gboolean framerate, const gchar * offers,
    GstCaps ** caps, P3dPointCloudInfo * info, gboolean * cuda,
    gboolean * new_pool)
{
  GstPad *srcpad = GST_BASE_PARSE_SRC_PAD (parse);
  GstCaps *chosen = gst_pad_peer_query_caps (srcpad, ours);
  P3dPointCloudInfo chosen_info;
  guint i;

  debug_init ();
  *new_pool = FALSE;
  if (chosen == NULL || gst_caps_is_empty (chosen)) {
    GST_ELEMENT_ERROR (parse, CORE, NEGOTIATION,
        ("Downstream accepts none of %" GST_PTR_FORMAT, ours), ("%s", offers));
    gst_caps_unref (ours);
    gst_clear_caps (&chosen);
    return FALSE;
  }
  gst_caps_unref (ours);
  chosen = gst_caps_truncate (chosen);
  chosen = gst_caps_make_writable (chosen);
  for (i = 0; i < gst_caps_get_size (chosen); i++) {
    GstStructure *s = gst_caps_get_structure (chosen, i);

    gst_structure_fixate_field_string (s, "format", format);
    if (framerate && gst_structure_has_field (s, "framerate"))
      gst_structure_fixate_field_nearest_fraction (s, "framerate", 0, 1);
  }
  chosen = gst_caps_fixate (chosen);

  if (!p3d_point_cloud_info_from_caps (&chosen_info, chosen)) {
    GST_ELEMENT_ERROR (parse, CORE, NEGOTIATION,
        ("Cannot output %" GST_PTR_FORMAT, chosen), (NULL));
    gst_caps_unref (chosen);
    return FALSE;
  }
  if (*caps == NULL || !gst_caps_is_equal (chosen, *caps)) {
    GST_DEBUG_OBJECT (parse, "caps %" GST_PTR_FORMAT, chosen);
    if (!gst_pad_push_event (srcpad, gst_event_new_caps (chosen))) {
      GST_ELEMENT_ERROR (parse, CORE, NEGOTIATION,
          ("Downstream refused %" GST_PTR_FORMAT, chosen), (NULL));
      gst_caps_unref (chosen);
      return FALSE;
    }
    *new_pool = *caps == NULL || !p3d_point_cloud_info_is_equal (&chosen_info,
        info) || p3d_caps_is_cuda (chosen) != *cuda;
    gst_caps_replace (caps, chosen);
    *info = chosen_info;
    *cuda = p3d_caps_is_cuda (chosen);
  }
  gst_caps_unref (chosen);
  return TRUE;
}
