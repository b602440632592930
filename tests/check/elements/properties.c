/* One rule for every numeric property of the plugin (p3dparamspec.h): a
 * value outside the property's range, written as gst-launch-1.0 writes it,
 * is kept as written (GObject would drop it with a warning and run the
 * element with the default) and stops the element when it starts with an
 * error naming the property; set while the element plays, it posts the
 * same error. The sweep covers every writable number, fraction and vector
 * of every element of the plugin and of its request pads, with each value
 * just outside the range and NaN. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dparamspec.h"
#include "p3dtest.h"

/* What gst-launch-1.0 would read as a value of @pspec outside its range,
 * each a string: below the minimum and above the maximum when the type
 * has room, NaN for a real. Empty when the range is the whole type. */
static GPtrArray *
bad_values (GParamSpec * pspec)
{
  GPtrArray *values = g_ptr_array_new_with_free_func (g_free);
  gchar number[G_ASCII_DTOSTR_BUF_SIZE];

  if (G_IS_PARAM_SPEC_INT (pspec)) {
    GParamSpecInt *p = G_PARAM_SPEC_INT (pspec);

    if (p->minimum > G_MININT)
      g_ptr_array_add (values, g_strdup_printf ("%d", p->minimum - 1));
    if (p->maximum < G_MAXINT)
      g_ptr_array_add (values, g_strdup_printf ("%d", p->maximum + 1));
  } else if (G_IS_PARAM_SPEC_UINT (pspec)) {
    GParamSpecUInt *p = G_PARAM_SPEC_UINT (pspec);

    if (p->minimum > 0)
      g_ptr_array_add (values, g_strdup_printf ("%u", p->minimum - 1));
    if (p->maximum < G_MAXUINT)
      g_ptr_array_add (values, g_strdup_printf ("%u", p->maximum + 1));
  } else if (G_IS_PARAM_SPEC_UINT64 (pspec)) {
    GParamSpecUInt64 *p = G_PARAM_SPEC_UINT64 (pspec);

    if (p->minimum > 0)
      g_ptr_array_add (values, g_strdup_printf ("%" G_GUINT64_FORMAT,
              p->minimum - 1));
    if (p->maximum < G_MAXUINT64)
      g_ptr_array_add (values, g_strdup_printf ("%" G_GUINT64_FORMAT,
              p->maximum + 1));
  } else if (G_IS_PARAM_SPEC_FLOAT (pspec)) {
    GParamSpecFloat *p = G_PARAM_SPEC_FLOAT (pspec);

    if (p->minimum > -G_MAXFLOAT) {
      g_ascii_formatd (number, sizeof (number), "%.9g", p->minimum > 0 ?
          -1.0 : p->minimum - 1.0);
      g_ptr_array_add (values, g_strdup (number));
    }
    if (p->maximum < G_MAXFLOAT) {
      g_ascii_formatd (number, sizeof (number), "%.9g", p->maximum * 2 + 1);
      g_ptr_array_add (values, g_strdup (number));
    }
    g_ptr_array_add (values, g_strdup ("nan"));
  } else if (G_IS_PARAM_SPEC_DOUBLE (pspec)) {
    GParamSpecDouble *p = G_PARAM_SPEC_DOUBLE (pspec);

    if (p->minimum > -G_MAXDOUBLE) {
      g_ascii_formatd (number, sizeof (number), "%.17g", p->minimum > 0 ?
          -1.0 : p->minimum - 1.0);
      g_ptr_array_add (values, g_strdup (number));
    }
    if (p->maximum < G_MAXDOUBLE) {
      g_ascii_formatd (number, sizeof (number), "%.17g", p->maximum * 2 + 1);
      g_ptr_array_add (values, g_strdup (number));
    }
    g_ptr_array_add (values, g_strdup ("nan"));
  } else if (GST_IS_PARAM_SPEC_FRACTION (pspec)) {
    GstParamSpecFraction *p = GST_PARAM_SPEC_FRACTION (pspec);

    if (p->min_num > 0 || (p->min_num == 0 && p->min_den > 0))
      g_ptr_array_add (values, g_strdup ("-1/1"));
    if (gst_util_fraction_compare (p->max_num, p->max_den, G_MAXINT, 1) < 0)
      g_ptr_array_add (values, g_strdup_printf ("%d/1", G_MAXINT));
  } else if (GST_IS_PARAM_SPEC_ARRAY_LIST (pspec)) {
    GParamSpec *element = GST_PARAM_SPEC_ARRAY_LIST (pspec)->element_spec;
    GPtrArray *inner = element ? bad_values (element) : NULL;
    GValue value = G_VALUE_INIT;
    guint i, n;
    gchar *rest;

    /* the default's other entries, the first one bad */
    g_value_init (&value, pspec->value_type);
    g_param_value_set_default (pspec, &value);
    n = gst_value_array_get_size (&value);
    for (i = 0; inner && n > 0 && i < inner->len; i++) {
      gchar *text = gst_value_serialize (&value);
      /* "< (double)a, (double)b, ... >": keep from the first comma */
      const gchar *comma = strchr (text, ',');

      rest = comma ? g_strdup (comma) : g_strdup (" >");
      g_ptr_array_add (values, g_strdup_printf ("< (double)%s%s",
              (const gchar *) g_ptr_array_index (inner, i), rest));
      g_free (rest);
      g_free (text);
    }
    g_value_unset (&value);
    if (inner)
      g_ptr_array_unref (inner);
  }
  return values;
}

static gboolean
is_numeric (GParamSpec * pspec)
{
  /* a vector of numbers too; not one of strings (bevrender's class-names) */
  return G_IS_PARAM_SPEC_INT (pspec) || G_IS_PARAM_SPEC_UINT (pspec)
      || G_IS_PARAM_SPEC_UINT64 (pspec) || G_IS_PARAM_SPEC_INT64 (pspec)
      || G_IS_PARAM_SPEC_FLOAT (pspec) || G_IS_PARAM_SPEC_DOUBLE (pspec)
      || GST_IS_PARAM_SPEC_FRACTION (pspec)
      || (GST_IS_PARAM_SPEC_ARRAY_LIST (pspec)
      && GST_PARAM_SPEC_ARRAY_LIST (pspec)->element_spec != NULL
      && is_numeric (GST_PARAM_SPEC_ARRAY_LIST (pspec)->element_spec));
}

/* The value as gst-launch-1.0 would store it, serialized. */
static gchar *
expected_text (GParamSpec * pspec, const gchar * text)
{
  GValue value = G_VALUE_INIT;
  gchar *serialized;

  g_value_init (&value, pspec->value_type);
  fail_unless (gst_value_deserialize_with_pspec (&value, text, pspec),
      "%s: cannot read %s", pspec->name, text);
  serialized = gst_value_serialize (&value);
  g_value_unset (&value);
  return serialized;
}

static gchar *
property_text (GObject * object, GParamSpec * pspec)
{
  GValue value = G_VALUE_INIT;
  gchar *text;

  g_value_init (&value, pspec->value_type);
  g_object_get_property (object, pspec->name, &value);
  text = gst_value_serialize (&value);
  g_value_unset (&value);
  return text;
}

/* The element alone in a pipeline, to PAUSED: fails with an error from
 * @element naming @property. */
static void
expect_refused_at_start (GstElement * pipeline, GstElement * element,
    const gchar * property, const gchar * text)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *message;
  GError *error = NULL;
  gchar *debug = NULL, *needle;

  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  message =
      gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (message != NULL, "%s: %s=%s started without an error",
      GST_ELEMENT_NAME (element), property, text);
  fail_unless (GST_MESSAGE_SRC (message) == GST_OBJECT (element));
  gst_message_parse_error (message, &error, &debug);
  needle = g_strdup_printf ("Invalid property %s", property);
  fail_unless (g_error_matches (error, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_SETTINGS) && strstr (error->message, needle),
      "%s: %s=%s: %s", GST_ELEMENT_NAME (element), property, text,
      error->message);
  GST_INFO ("%s %s=%s: %s", GST_ELEMENT_NAME (element), property, text,
      error->message);
  g_free (needle);
  g_clear_error (&error);
  g_free (debug);
  gst_message_unref (message);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_bus_set_flushing (bus, TRUE);
  gst_bus_set_flushing (bus, FALSE);
  gst_object_unref (bus);
}

/* Every numeric property of @object (@element, or one of its pads), each
 * bad value in turn; returns how many values were tried. */
static guint
sweep_object (GstElement * pipeline, GstElement * element, GObject * object)
{
  GParamSpec **specs;
  guint n, i, j, tried = 0;

  specs = g_object_class_list_properties (G_OBJECT_GET_CLASS (object), &n);
  for (i = 0; i < n; i++) {
    GParamSpec *pspec = specs[i];
    GPtrArray *values;

    /* ours (P3d...), not the GStreamer base classes' (num-buffers) */
    if (!(pspec->flags & G_PARAM_WRITABLE) || !(pspec->flags &
            G_PARAM_READABLE) || !is_numeric (pspec)
        || !g_str_has_prefix (g_type_name (pspec->owner_type), "P3d"))
      continue;
    /* our own numbers: all checked at start */
    fail_unless (p3d_param_spec_is_checked (pspec), "%s: property %s is "
        "not a p3d_param_spec_*: GObject would drop a value outside its "
        "range", G_OBJECT_TYPE_NAME (object), pspec->name);
    values = bad_values (pspec);
    for (j = 0; j < values->len; j++) {
      const gchar *text = g_ptr_array_index (values, j);
      gchar *expected = expected_text (pspec, text), *stored;
      GValue value = G_VALUE_INIT;

      gst_util_set_object_arg (object, pspec->name, text);
      stored = property_text (object, pspec);
      fail_unless_equals_string (stored, expected);
      expect_refused_at_start (pipeline, element, pspec->name, text);
      /* back to the default for the next one */
      g_value_init (&value, pspec->value_type);
      g_param_value_set_default (pspec, &value);
      g_object_set_property (object, pspec->name, &value);
      g_value_unset (&value);
      g_free (expected);
      g_free (stored);
      tried++;
    }
    g_ptr_array_unref (values);
  }
  g_free (specs);
  return tried;
}

GST_START_TEST (test_every_numeric_property)
{
  GstPlugin *plugin = gst_registry_find_plugin (gst_registry_get (),
      "perception");
  GList *features, *l;
  guint tried = 0, elements = 0;

  fail_unless (plugin != NULL);
  features = gst_registry_get_feature_list_by_plugin (gst_registry_get (),
      "perception");
  for (l = features; l; l = l->next) {
    GstElementFactory *factory;
    GstElement *pipeline, *element;
    const GList *templates;
    GPtrArray *pads = g_ptr_array_new ();
    guint k;

    if (!GST_IS_ELEMENT_FACTORY (l->data))
      continue;
    factory = GST_ELEMENT_FACTORY (l->data);
    element = gst_element_factory_create (factory, NULL);
    pipeline = gst_pipeline_new (NULL);
    gst_bin_add (GST_BIN (pipeline), element);
    /* one pad of each request template: its properties too */
    for (templates = gst_element_class_get_pad_template_list
        (GST_ELEMENT_GET_CLASS (element)); templates;
        templates = templates->next) {
      GstPadTemplate *templ = templates->data;

      if (GST_PAD_TEMPLATE_PRESENCE (templ) == GST_PAD_REQUEST)
        g_ptr_array_add (pads, gst_element_request_pad (element, templ, NULL,
                NULL));
    }
    tried += sweep_object (pipeline, element, G_OBJECT (element));
    for (k = 0; k < pads->len; k++)
      tried += sweep_object (pipeline, element, g_ptr_array_index (pads, k));
    for (k = 0; k < pads->len; k++) {
      gst_element_release_request_pad (element, g_ptr_array_index (pads, k));
      gst_object_unref (g_ptr_array_index (pads, k));
    }
    g_ptr_array_unref (pads);
    gst_object_unref (pipeline);
    elements++;
  }
  gst_plugin_feature_list_free (features);
  gst_object_unref (plugin);
  GST_INFO ("%u bad values over %u elements", tried, elements);
  /* the sweep found the properties it is about */
  fail_unless (elements >= 14 && tried >= 90, "%u values, %u elements",
      tried, elements);
}

GST_END_TEST;

/* The values of the newcomer issue (25.2), as gst-launch-1.0 lines. */
GST_START_TEST (test_issue_values)
{
  static const struct
  {
    const gchar *launch;
    const gchar *words;
  } lines[] = {
    {"pointcloudtestsrc num-buffers=1 ! voxelize voxel-size=\"<-0.16,0.16,4>\" "
          "! fakesink", "Invalid property voxel-size: -0.16 (value 1 of 3) "
          "is not above 0"},
    {"pointcloudtestsrc num-buffers=1 ! voxelize max-points=0 ! fakesink",
        "Invalid property max-points: 0 is not from 1 to 1024"},
    {"pointcloudtestsrc num-buffers=1 emit=boxes ! nms iou-threshold=5 "
          "! fakesink", "Invalid property iou-threshold: 5 is not from 0 to 1"},
    {"pointcloudtestsrc num-buffers=1 ! bevrender width=-5 ! fakesink",
        "Invalid property width: -5 is not from 0 to"},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (lines); i++) {
    GstElement *pipeline = gst_parse_launch (lines[i].launch, NULL);
    GstBus *bus = gst_element_get_bus (pipeline);
    GstMessage *message;
    GError *error = NULL;

    fail_unless (pipeline != NULL);
    fail_unless_equals_int (gst_element_set_state (pipeline,
            GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    message = gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
        GST_MESSAGE_ERROR);
    fail_unless (message != NULL, "%s ran", lines[i].launch);
    gst_message_parse_error (message, &error, NULL);
    fail_unless (strstr (error->message, lines[i].words) != NULL,
        "%s: %s", lines[i].launch, error->message);
    g_clear_error (&error);
    gst_message_unref (message);
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_object_unref (bus);
    gst_object_unref (pipeline);
  }
}

GST_END_TEST;

/* A vector of the wrong length is not dropped for the default either. */
GST_START_TEST (test_vector_length)
{
  GstElement *pipeline, *voxelize;
  GstBus *bus;
  GstMessage *message;
  GError *error = NULL;

  pipeline = gst_parse_launch ("pointcloudtestsrc num-buffers=1 ! voxelize "
      "name=v ! fakesink", NULL);
  voxelize = gst_bin_get_by_name (GST_BIN (pipeline), "v");
  /* the setter says so at once, as GObject does for a bad value */
  ASSERT_WARNING (gst_util_set_object_arg (G_OBJECT (voxelize), "voxel-size",
          "<0.2,0.2>"));
  bus = gst_element_get_bus (pipeline);
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_PLAYING),
      GST_STATE_CHANGE_FAILURE);
  message =
      gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (message != NULL);
  gst_message_parse_error (message, &error, NULL);
  fail_unless (strstr (error->message, "Invalid property voxel-size: needs 3 "
          "values, got 2") != NULL, "%s", error->message);
  g_clear_error (&error);
  gst_message_unref (message);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  /* a good value clears it */
  gst_util_set_object_arg (G_OBJECT (voxelize), "voxel-size", "<0.2,0.2,4>");
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PAUSED) !=
      GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (voxelize);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* A threshold set out of range while playing: the same error, posted at
 * once by the element. */
GST_START_TEST (test_set_while_playing)
{
  GstElement *pipeline, *nms;
  GstBus *bus;
  GstMessage *message;
  GError *error = NULL;

  pipeline = gst_parse_launch ("pointcloudtestsrc emit=boxes "
      "! nms name=n ! fakesink sync=true", NULL);
  nms = gst_bin_get_by_name (GST_BIN (pipeline), "n");
  bus = gst_element_get_bus (pipeline);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_get_state (pipeline, NULL, NULL,
          10 * GST_SECOND) == GST_STATE_CHANGE_SUCCESS);
  g_object_set (nms, "iou-threshold", 0.3f, NULL);
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR) == NULL);
  gst_util_set_object_arg (G_OBJECT (nms), "iou-threshold", "5");
  message =
      gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (message != NULL);
  fail_unless (GST_MESSAGE_SRC (message) == GST_OBJECT (nms));
  gst_message_parse_error (message, &error, NULL);
  fail_unless (strstr (error->message, "Invalid property iou-threshold: 5 is "
          "not from 0 to 1") != NULL, "%s", error->message);
  g_clear_error (&error);
  gst_message_unref (message);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (nms);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_END_TEST;

static Suite *
properties_suite (void)
{
  Suite *s = suite_create ("properties");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_every_numeric_property);
  tcase_add_test (tc, test_issue_values);
  tcase_add_test (tc, test_vector_length);
  tcase_add_test (tc, test_set_while_playing);
  return s;
}

P3D_CHECK_MAIN (properties);
