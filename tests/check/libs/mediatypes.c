/* The media types of the caps library: each info struct's defaults, its
 * caps round trip (random values and limits, through the caps and through
 * their text), every way a caps is refused (not fixed, empty, ANY, another
 * media type, a field missing, of the wrong type or out of range), caps as a
 * user writes them in gst-launch, the format tables, and tensor layouts
 * computed by hand.
 *
 * The checks that hold for every media type run over a table of them; what
 * is particular to one media type has its own test below. */
#include <math.h>
#include <string.h>
#include <gst/check/gstcheck.h>

#include "p3dperception.h"
#include "p3dtest.h"

/* The largest buffer of any media type (all its tensors together): the
 * most one write(2) stores on Linux, so that filesink can write it. */
#define RECORD_LIMIT G_GUINT64_CONSTANT (0x7ffff000)

typedef union
{
  P3dPointCloudInfo point_cloud;
  P3dVoxelsInfo voxels;
  P3dPillarsInfo pillars;
  P3dCameraFeaturesInfo camera_features;
  P3dBevFeaturesInfo bev_features;
  P3dBoxes3dInfo boxes3d;
  P3dBoxes2dInfo boxes2d;
} AnyInfo;

/* Every media type through one set of function pointers. */
typedef struct
{
  const gchar *media_type;
  void (*init) (gpointer info);
    gboolean (*from_caps) (gpointer info, const GstCaps * caps);
  GstCaps *(*to_caps) (gconstpointer info);
    gboolean (*is_equal) (gconstpointer a, gconstpointer b);
  /* Valid caps with every field, the optional ones too, each value of the
   * type that to_caps() writes, so that to_caps() gives them back. */
  const gchar *full;
  /* The fields that may be absent. */
  const gchar *optional[3];
  /* What a pad template of this media type offers. */
  const gchar *template_caps;
} MediaType;

#define WRAP_INFO(name) \
static void name##_init (gpointer info) \
{ p3d_##name##_info_init (info); } \
static gboolean name##_from_caps (gpointer info, const GstCaps * caps) \
{ return p3d_##name##_info_from_caps (info, caps); } \
static GstCaps * name##_to_caps (gconstpointer info) \
{ return p3d_##name##_info_to_caps (info); } \
static gboolean name##_is_equal (gconstpointer a, gconstpointer b) \
{ return p3d_##name##_info_is_equal (a, b); }

WRAP_INFO (point_cloud);
WRAP_INFO (voxels);
WRAP_INFO (pillars);
WRAP_INFO (camera_features);
WRAP_INFO (bev_features);
WRAP_INFO (boxes3d);
WRAP_INFO (boxes2d);

#define INFO_FUNCS(name) \
  name##_init, name##_from_caps, name##_to_caps, name##_is_equal

/* KITTI PointPillars, as the brief of voxelize writes it. */
#define KITTI_GRID "grid=(int)<432,496,1>, " \
  "voxel-size=(double)<0.16,0.16,4.0>, " \
  "range=(double)<0.0,-39.68,-3.0,69.12,39.68,1.0>, " \
  "effective-range=(double)<0.0,-39.68,-3.0,69.12,39.68,1.0>"

enum
{
  POINT_CLOUD, VOXELS, PILLARS, CAMERA_FEATURES, BEV_FEATURES, BOXES3D,
  BOXES2D, N_MEDIA_TYPES
};

static const MediaType media_types[N_MEDIA_TYPES] = {
  {P3D_MEDIA_TYPE_POINT_CLOUD, INFO_FUNCS (point_cloud),
        "application/x-point-cloud, format=(string)xyzi, "
        "framerate=(fraction)10/1", {"framerate", NULL},
      P3D_POINT_CLOUD_CAPS_ALL},
  {P3D_MEDIA_TYPE_VOXELS, INFO_FUNCS (voxels),
        "application/x-voxels, format=(string)xyzi, channels=(int)4, "
        "max-voxels=(int)40000, max-points=(int)32, " KITTI_GRID ", "
        "framerate=(fraction)10/1", {"framerate", "effective-range", NULL},
      P3D_VOXELS_CAPS_ALL},
  {P3D_MEDIA_TYPE_PILLAR_FEATURES, INFO_FUNCS (pillars),
        "application/x-pillar-features, format=(string)F32, "
        "features=(string)pointpillars-10, max-voxels=(int)40000, "
        "max-points=(int)32, " KITTI_GRID ", framerate=(fraction)10/1",
      {"framerate", "effective-range", NULL}, P3D_PILLARS_CAPS_ALL},
  {P3D_MEDIA_TYPE_CAMERA_FEATURES, INFO_FUNCS (camera_features),
        "application/x-camera-features, format=(string)F16, cameras=(int)6, "
        "channels=(int)80, depth-bins=(int)118, width=(int)88, "
        "height=(int)32, framerate=(fraction)12/1", {"framerate", NULL},
      P3D_CAMERA_FEATURES_CAPS_ALL},
  {P3D_MEDIA_TYPE_BEV_FEATURES, INFO_FUNCS (bev_features),
        "application/x-bev-features, format=(string)F32, channels=(int)80, "
        "width=(int)180, height=(int)180, layout=(string)yx, "
        "range=(double)<-54.0,-54.0,-10.0,54.0,54.0,10.0>, "
        "framerate=(fraction)12/1", {"framerate", "range", "layout"},
      P3D_BEV_FEATURES_CAPS_ALL},
  {P3D_MEDIA_TYPE_BOXES3D, INFO_FUNCS (boxes3d),
        "application/x-boxes3d, max-boxes=(int)500, framerate=(fraction)10/1",
      {"framerate", NULL}, P3D_MEDIA_TYPE_BOXES3D},
  {P3D_MEDIA_TYPE_BOXES2D, INFO_FUNCS (boxes2d),
        "application/x-boxes2d, max-boxes=(int)100, framerate=(fraction)30/1",
      {"framerate", NULL}, P3D_MEDIA_TYPE_BOXES2D},
};

static GstCaps *
caps_parse (const gchar * str)
{
  GstCaps *caps = gst_caps_from_string (str);

  fail_unless (caps != NULL, "cannot parse caps '%s'", str);
  return caps;
}

static gboolean
field_is_optional (const MediaType * type, const gchar * field)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (type->optional); i++)
    if (type->optional[i] && g_str_equal (type->optional[i], field))
      return TRUE;
  return FALSE;
}

/* from_caps() on @caps answers @expected; a refusal leaves the info as it
 * was. @what says which case this is in the failure message. */
static void
check_caps (const MediaType * type, const GstCaps * caps, gboolean expected,
    const gchar * what)
{
  AnyInfo sentinel, info;
  GstCaps *full = caps_parse (type->full);
  gchar *str = gst_caps_to_string (caps);
  gboolean result;

  type->init (&sentinel);
  fail_unless (type->from_caps (&sentinel, full));
  gst_caps_unref (full);
  info = sentinel;
  result = type->from_caps (&info, caps);
  fail_unless (result == expected, "%s: %s %s (%s)", type->media_type,
      result ? "accepted" : "refused", str, what);
  if (!result)
    fail_unless (type->is_equal (&info, &sentinel),
        "%s: refusing %s changed the info", type->media_type, str);
  g_free (str);
}

static void
check_string (const MediaType * type, const gchar * str, gboolean expected)
{
  GstCaps *caps = caps_parse (str);

  check_caps (type, caps, expected, "as written");
  gst_caps_unref (caps);
}

/* @type's full caps with the fields of @patch ("field=value, ...") set over
 * them, so that each case below names only what it changes. */
static GstCaps *
caps_patched (const MediaType * type, const gchar * patch)
{
  GstCaps *caps = caps_parse (type->full);
  GstStructure *s = gst_caps_get_structure (caps, 0);
  gchar *str = g_strconcat ("patch, ", patch, NULL);
  GstStructure *fields = gst_structure_from_string (str, NULL);
  guint i;

  fail_unless (fields != NULL, "cannot parse '%s'", patch);
  /* effective-range follows from the grid fields: a patch of those drops
   * it, unless it sets it too (test_voxels_effective_range checks it) */
  if (!gst_structure_has_field (fields, "effective-range")
      && (gst_structure_has_field (fields, "range")
          || gst_structure_has_field (fields, "voxel-size")
          || gst_structure_has_field (fields, "grid")))
    gst_structure_remove_field (s, "effective-range");
  for (i = 0; i < (guint) gst_structure_n_fields (fields); i++) {
    const gchar *name = gst_structure_nth_field_name (fields, i);

    gst_structure_set_value (s, name, gst_structure_get_value (fields, name));
  }
  gst_structure_free (fields);
  g_free (str);
  return caps;
}

static void
check_patch (guint type, const gchar * patch, gboolean expected)
{
  GstCaps *caps = caps_patched (&media_types[type], patch);

  check_caps (&media_types[type], caps, expected, patch);
  gst_caps_unref (caps);
}

/* The caps of @type with @field set to @value. */
static GstCaps *
caps_with_value (const MediaType * type, const gchar * field,
    const GValue * value)
{
  GstCaps *caps = caps_parse (type->full);

  gst_structure_set_value (gst_caps_get_structure (caps, 0), field, value);
  return caps;
}

static void
check_value (const MediaType * type, const gchar * field,
    const GValue * value, gboolean expected, const gchar * what)
{
  GstCaps *caps = caps_with_value (type, field, value);
  gchar *why = g_strdup_printf ("%s: %s", field, what);

  check_caps (type, caps, expected, why);
  g_free (why);
  gst_caps_unref (caps);
}

/* The round trip of a valid @info: to_caps() gives fixed caps that
 * from_caps() reads back equal, also through their text and in CUDA
 * memory, and that the media type's pad template accepts. */
static void
check_round_trip (const MediaType * type, gconstpointer info)
{
  GstCaps *caps = type->to_caps (info), *again, *templ;
  AnyInfo parsed;
  gchar *str;

  fail_unless (caps != NULL, "%s: no caps", type->media_type);
  str = gst_caps_to_string (caps);
  fail_unless (gst_caps_is_fixed (caps), "not fixed: %s", str);
  type->init (&parsed);
  fail_unless (type->from_caps (&parsed, caps), "refused its own caps %s", str);
  fail_unless (type->is_equal (&parsed, info), "read back differs: %s", str);

  again = caps_parse (str);
  type->init (&parsed);
  fail_unless (type->from_caps (&parsed, again), "refused as text: %s", str);
  fail_unless (type->is_equal (&parsed, info), "differs as text: %s", str);
  gst_caps_unref (again);

  again = gst_caps_copy (caps);
  gst_caps_set_features (again, 0,
      gst_caps_features_new (P3D_CAPS_FEATURE_MEMORY_CUDA, NULL));
  type->init (&parsed);
  fail_unless (type->from_caps (&parsed, again), "refused in CUDA memory");
  fail_unless (type->is_equal (&parsed, info), "differs in CUDA memory");
  gst_caps_unref (again);

  templ = caps_parse (type->template_caps);
  fail_unless (gst_caps_is_subset (caps, templ), "%s is not within the "
      "template %s", str, type->template_caps);
  gst_caps_unref (templ);
  gst_caps_unref (caps);
  g_free (str);
}

/* 53 random bits: a double uniform in [lo, hi). */
static gdouble
rng_double (P3dTestRng * rng, gdouble lo, gdouble hi)
{
  guint64 high = p3d_test_rng_u32 (rng), low = p3d_test_rng_u32 (rng);
  guint64 bits = (high << 21) | (low >> 11);

  return lo + (hi - lo) * ((gdouble) bits / 9007199254740992.0);
}

static guint
gcd (guint a, guint b)
{
  while (b != 0) {
    guint t = a % b;

    a = b;
    b = t;
  }
  return a;
}

/* A framerate as caps hold it: absent (0/1), a reduced fraction (caps
 * reduce 60/2 to 30/1), or a limit. */
static void
random_framerate (P3dTestRng * rng, gint * fps_n, gint * fps_d)
{
  guint n, d, g;

  switch (p3d_test_rng_below (rng, 8)) {
    case 0:
      *fps_n = 0;
      *fps_d = 1;
      return;
    case 1:
      *fps_n = G_MAXINT;
      *fps_d = 1;
      return;
    case 2:
      *fps_n = 1;
      *fps_d = G_MAXINT;
      return;
    default:
      n = 1 + p3d_test_rng_below (rng, 240000);
      d = 1 + p3d_test_rng_below (rng, 1001);
      g = gcd (n, d);
      *fps_n = n / g;
      *fps_d = d / g;
  }
}

/* A grid of 1 to @max_cells cells per axis, of random voxel size and
 * origin; the cell counts are returned in @cells. */
static void
random_grid (P3dTestRng * rng, guint max_cells, gdouble * voxel_size,
    gdouble * range, guint * cells)
{
  guint i;

  for (i = 0; i < 3; i++) {
    cells[i] = 1 + p3d_test_rng_below (rng, max_cells);
    voxel_size[i] = rng_double (rng, 0.01, 2.0);
    range[i] = rng_double (rng, -100.0, 100.0);
    range[3 + i] = range[i] + cells[i] * voxel_size[i];
  }
}

/* ---- tests over every media type ---- */

GST_START_TEST (test_full_caps)
{
  guint t;

  for (t = 0; t < N_MEDIA_TYPES; t++) {
    const MediaType *type = &media_types[t];
    GstCaps *caps = caps_parse (type->full), *out;
    AnyInfo info;
    gchar *str;

    type->init (&info);
    fail_unless (type->from_caps (&info, caps), "refused %s", type->full);
    out = type->to_caps (&info);
    str = gst_caps_to_string (out);
    /* to_caps() writes exactly the fields, and types, a user writes */
    fail_unless (gst_caps_is_equal (out, caps), "%s gave back %s",
        type->full, str);
    check_round_trip (type, &info);
    g_free (str);
    gst_caps_unref (out);
    gst_caps_unref (caps);
  }
}

GST_END_TEST;

GST_START_TEST (test_refuse_empty_any_and_other_types)
{
  guint t, u;
  const gchar *others[] = { "video/x-raw", "application/x-tensor",
    "application/x-voxel", "application/x-pointcloud"
  };

  for (t = 0; t < N_MEDIA_TYPES; t++) {
    const MediaType *type = &media_types[t];
    GstCaps *caps;

    caps = gst_caps_new_empty ();
    check_caps (type, caps, FALSE, "empty");
    gst_caps_unref (caps);
    caps = gst_caps_new_any ();
    check_caps (type, caps, FALSE, "ANY");
    gst_caps_unref (caps);

    /* the same fields under another name */
    for (u = 0; u < N_MEDIA_TYPES + G_N_ELEMENTS (others); u++) {
      const gchar *name = u < N_MEDIA_TYPES ? media_types[u].media_type :
          others[u - N_MEDIA_TYPES];

      if (u == t)
        continue;
      caps = caps_parse (type->full);
      gst_structure_set_name (gst_caps_get_structure (caps, 0), name);
      check_caps (type, caps, FALSE, "renamed");
      gst_caps_unref (caps);
    }
    /* every other media type's own caps */
    for (u = 0; u < N_MEDIA_TYPES; u++) {
      if (u == t)
        continue;
      caps = caps_parse (media_types[u].full);
      check_caps (type, caps, FALSE, "another media type");
      gst_caps_unref (caps);
    }
  }
}

GST_END_TEST;

/* @value made not fixed: an int range, a list of strings, a fraction
 * range, or an array whose first entry is a list. */
static void
value_init_not_fixed (GValue * out, const GValue * value)
{
  GType type = G_VALUE_TYPE (value);

  if (type == G_TYPE_INT) {
    gint x = g_value_get_int (value);

    g_value_init (out, GST_TYPE_INT_RANGE);
    gst_value_set_int_range (out, x - 1, x);
  } else if (type == G_TYPE_STRING) {
    GValue other = G_VALUE_INIT;

    gst_value_list_init (out, 2);
    gst_value_list_append_value (out, value);
    g_value_init (&other, G_TYPE_STRING);
    g_value_set_string (&other, "other");
    gst_value_list_append_and_take_value (out, &other);
  } else if (type == GST_TYPE_FRACTION) {
    g_value_init (out, GST_TYPE_FRACTION_RANGE);
    gst_value_set_fraction_range_full (out, 0, 1,
        gst_value_get_fraction_numerator (value),
        gst_value_get_fraction_denominator (value));
  } else if (type == GST_TYPE_ARRAY) {
    const GValue *first = gst_value_array_get_value (value, 0);
    GValue list = G_VALUE_INIT, other = G_VALUE_INIT;
    guint i;

    gst_value_list_init (&list, 2);
    gst_value_list_append_value (&list, first);
    g_value_init (&other, G_VALUE_TYPE (first));
    if (G_VALUE_HOLDS_INT (first))
      g_value_set_int (&other, g_value_get_int (first) + 1);
    else
      g_value_set_double (&other, g_value_get_double (first) + 1.0);
    gst_value_list_append_and_take_value (&list, &other);
    gst_value_array_init (out, gst_value_array_get_size (value));
    gst_value_array_append_and_take_value (out, &list);
    for (i = 1; i < gst_value_array_get_size (value); i++)
      gst_value_array_append_value (out, gst_value_array_get_value (value, i));
  } else {
    fail ("no unfixed form of a %s", G_VALUE_TYPE_NAME (value));
  }
}

GST_START_TEST (test_refuse_not_fixed)
{
  guint t, i;

  for (t = 0; t < N_MEDIA_TYPES; t++) {
    const MediaType *type = &media_types[t];
    GstCaps *full = caps_parse (type->full), *caps;
    const GstStructure *s = gst_caps_get_structure (full, 0);
    GstStructure *other;

    /* each field in turn given more than one value */
    for (i = 0; i < (guint) gst_structure_n_fields (s); i++) {
      const gchar *field = gst_structure_nth_field_name (s, i);
      GValue unfixed = G_VALUE_INIT;

      value_init_not_fixed (&unfixed, gst_structure_get_value (s, field));
      check_value (type, field, &unfixed, FALSE, "not fixed");
      g_value_unset (&unfixed);
    }

    /* two structures, even when the first is valid */
    caps = gst_caps_copy (full);
    other = gst_structure_copy (s);
    gst_structure_set (other, "framerate", GST_TYPE_FRACTION, 25, 1, NULL);
    gst_caps_append_structure (caps, other);
    check_caps (type, caps, FALSE, "two structures");
    gst_caps_unref (caps);

    /* ANY caps features */
    caps = gst_caps_copy (full);
    gst_caps_set_features (caps, 0, gst_caps_features_new_any ());
    check_caps (type, caps, FALSE, "ANY features");
    gst_caps_unref (caps);

    /* the same caps in CUDA memory are fine */
    caps = gst_caps_copy (full);
    gst_caps_set_features (caps, 0,
        gst_caps_features_new (P3D_CAPS_FEATURE_MEMORY_CUDA, NULL));
    check_caps (type, caps, TRUE, "CUDA memory");
    gst_caps_unref (caps);

    /* and fields nobody reads are ignored, as GstVideoInfo does */
    caps = gst_caps_copy (full);
    gst_caps_set_simple (caps, "x-vendor-note", G_TYPE_STRING, "hello", NULL);
    check_caps (type, caps, TRUE, "an unknown field");
    gst_caps_unref (caps);
    gst_caps_unref (full);
  }
  /* the formats list a pad template holds */
  check_string (&media_types[POINT_CLOUD], P3D_POINT_CLOUD_CAPS_ALL, FALSE);
  check_string (&media_types[BEV_FEATURES],
      "application/x-bev-features, format=F32, channels=[1,80], width=180, "
      "height=180", FALSE);
}

GST_END_TEST;

GST_START_TEST (test_refuse_missing_field)
{
  guint t, i;

  for (t = 0; t < N_MEDIA_TYPES; t++) {
    const MediaType *type = &media_types[t];
    GstCaps *full = caps_parse (type->full);
    const GstStructure *s = gst_caps_get_structure (full, 0);

    for (i = 0; i < (guint) gst_structure_n_fields (s); i++) {
      const gchar *field = gst_structure_nth_field_name (s, i);
      GstCaps *caps = gst_caps_copy (full);
      gboolean optional = field_is_optional (type, field);
      gchar *what = g_strdup_printf ("without %s", field);

      gst_structure_remove_field (gst_caps_get_structure (caps, 0), field);
      check_caps (type, caps, optional, what);
      g_free (what);
      gst_caps_unref (caps);
    }
    gst_caps_unref (full);
  }
}

GST_END_TEST;

static void
value_free (gpointer v)
{
  g_value_unset (v);
  g_free (v);
}

/* Values of a type other than @value's that a field must refuse. */
static GPtrArray *
wrong_type_values (const GValue * value)
{
  GPtrArray *values = g_ptr_array_new_with_free_func (value_free);
  GType type = G_VALUE_TYPE (value);
  GValue *v;
  guint i, j;

#define NEW_VALUE(gtype) \
  (v = g_new0 (GValue, 1), g_value_init (v, gtype), \
      g_ptr_array_add (values, v), v)

  if (type == G_TYPE_INT) {
    gint x = g_value_get_int (value);
    gchar *text = g_strdup_printf ("%d", x);

    g_value_take_string (NEW_VALUE (G_TYPE_STRING), text);
    g_value_set_double (NEW_VALUE (G_TYPE_DOUBLE), x);
    g_value_set_uint (NEW_VALUE (G_TYPE_UINT), x);
    g_value_set_int64 (NEW_VALUE (G_TYPE_INT64), x);
    g_value_set_boolean (NEW_VALUE (G_TYPE_BOOLEAN), TRUE);
  } else if (type == G_TYPE_STRING) {
    g_value_set_int (NEW_VALUE (G_TYPE_INT), 4);
    g_value_set_boolean (NEW_VALUE (G_TYPE_BOOLEAN), TRUE);
    g_value_set_double (NEW_VALUE (G_TYPE_DOUBLE), 1.0);
  } else if (type == GST_TYPE_FRACTION) {
    gint n = gst_value_get_fraction_numerator (value);
    gint d = gst_value_get_fraction_denominator (value);

    g_value_set_int (NEW_VALUE (G_TYPE_INT), n / d);
    g_value_set_double (NEW_VALUE (G_TYPE_DOUBLE), (gdouble) n / d);
    g_value_take_string (NEW_VALUE (G_TYPE_STRING),
        g_strdup_printf ("%d/%d", n, d));
  } else if (type == GST_TYPE_ARRAY) {
    guint n = gst_value_array_get_size (value);

    g_value_take_string (NEW_VALUE (G_TYPE_STRING),
        gst_value_serialize (value));
    g_value_set_int (NEW_VALUE (G_TYPE_INT), 1);
    g_value_set_double (NEW_VALUE (G_TYPE_DOUBLE), 1.0);
    /* one entry at a time of a type the array does not take: a string,
     * and a double among integers (grid) or a boolean among numbers;
     * written as text, as gst_value_array_append_value() refuses entries
     * of mixed types */
    for (i = 0; i < n; i++) {
      guint variant;

      for (variant = 0; variant < 2; variant++) {
        GString *text = g_string_new ("<");

        for (j = 0; j < n; j++) {
          const GValue *entry = gst_value_array_get_value (value, j);
          gboolean is_int = G_VALUE_HOLDS_INT (entry);
          gchar *str = gst_value_serialize (entry);

          if (j > 0)
            g_string_append (text, ", ");
          if (j != i)
            g_string_append_printf (text, "(%s)%s", is_int ? "int" : "double",
                str);
          else if (variant == 0)
            g_string_append_printf (text, "(string)\"%s\"", str);
          else if (is_int)
            g_string_append_printf (text, "(double)%s", str);
          else
            g_string_append (text, "(boolean)true");
          g_free (str);
        }
        g_string_append (text, ">");
        fail_unless (gst_value_deserialize (NEW_VALUE (GST_TYPE_ARRAY),
                text->str), "cannot parse %s", text->str);
        g_string_free (text, TRUE);
      }
    }
  } else {
    fail ("no wrong type for a %s", G_VALUE_TYPE_NAME (value));
  }
#undef NEW_VALUE
  return values;
}

GST_START_TEST (test_refuse_wrong_type)
{
  guint t, i, k;

  for (t = 0; t < N_MEDIA_TYPES; t++) {
    const MediaType *type = &media_types[t];
    GstCaps *full = caps_parse (type->full);
    const GstStructure *s = gst_caps_get_structure (full, 0);

    for (i = 0; i < (guint) gst_structure_n_fields (s); i++) {
      const gchar *field = gst_structure_nth_field_name (s, i);
      GPtrArray *values = wrong_type_values (gst_structure_get_value (s,
              field));

      /* an optional field that is present must be valid too */
      for (k = 0; k < values->len; k++) {
        gchar *text = gst_value_serialize (g_ptr_array_index (values, k));
        gchar *what = g_strdup_printf ("(%s) %s",
            G_VALUE_TYPE_NAME (g_ptr_array_index (values, k)), text);

        check_value (type, field, g_ptr_array_index (values, k), FALSE, what);
        g_free (what);
        g_free (text);
      }
      g_ptr_array_free (values, TRUE);
    }
    gst_caps_unref (full);
  }
}

GST_END_TEST;

GST_START_TEST (test_framerate)
{
  guint t;

  for (t = 0; t < N_MEDIA_TYPES; t++) {
    const MediaType *type = &media_types[t];
    GstCaps *caps;
    AnyInfo info, expected;

    /* every info struct keeps fps_n, fps_d at the same place relative to
     * its own fields; read them through the caps round trip instead */
    caps = caps_patched (type, "framerate=(fraction)30/1");
    fail_unless (type->from_caps (&info, caps));
    gst_caps_unref (caps);
    caps = type->to_caps (&info);
    fail_unless (gst_structure_has_field_typed (gst_caps_get_structure (caps,
                0), "framerate", GST_TYPE_FRACTION));
    gst_caps_unref (caps);

    /* absent and 0/1 (variable rate) read the same; to_caps() leaves a
     * variable rate out */
    caps = caps_parse (type->full);
    gst_structure_remove_field (gst_caps_get_structure (caps, 0), "framerate");
    fail_unless (type->from_caps (&expected, caps));
    gst_caps_unref (caps);
    caps = caps_patched (type, "framerate=(fraction)0/1");
    fail_unless (type->from_caps (&info, caps));
    gst_caps_unref (caps);
    fail_unless (type->is_equal (&info, &expected));
    caps = type->to_caps (&info);
    fail_if (gst_structure_has_field (gst_caps_get_structure (caps, 0),
            "framerate"), "%s: to_caps wrote a variable framerate",
        type->media_type);
    gst_caps_unref (caps);

    check_patch (t, "framerate=(fraction)2147483647/1", TRUE);
    check_patch (t, "framerate=(fraction)1/2147483647", TRUE);
    check_patch (t, "framerate=(fraction)30000/1001", TRUE);
    check_patch (t, "framerate=(fraction)-10/1", FALSE);
    check_patch (t, "framerate=(fraction)10/-1", FALSE);
    /* "30/0" is not a fraction: gst_caps_from_string() makes a string */
    check_patch (t, "framerate=30/0", FALSE);
  }
}

GST_END_TEST;

/* ---- one media type at a time ---- */

GST_START_TEST (test_point_cloud)
{
  const MediaType *type = &media_types[POINT_CLOUD];
  P3dPointCloudInfo info, other;
  P3dTensorLayout layout;
  P3dTestRng rng;
  guint i;

  p3d_point_cloud_info_init (&info);
  fail_unless_equals_int (info.finfo->format, P3D_POINT_FORMAT_UNKNOWN);
  fail_unless_equals_int (info.fps_n, 0);
  fail_unless_equals_int (info.fps_d, 1);
  p3d_point_cloud_info_init (&other);
  fail_unless (p3d_point_cloud_info_is_equal (&info, &other));
  /* an unset info has no caps */
  ASSERT_CRITICAL (fail_unless (p3d_point_cloud_info_to_caps (&info) == NULL));

  fail_if (p3d_point_cloud_info_set_format (&info, P3D_POINT_FORMAT_UNKNOWN));
  fail_if (p3d_point_cloud_info_set_format (&info, (P3dPointFormat) 99));
  for (i = P3D_POINT_FORMAT_XYZ; i <= P3D_POINT_FORMAT_XYZIR; i++) {
    fail_unless (p3d_point_cloud_info_set_format (&info, i));
    fail_unless_equals_int (info.finfo->format, i);
    check_round_trip (type, &info);
  }
  fail_unless (p3d_point_cloud_info_set_format (&other, P3D_POINT_FORMAT_XYZ));
  fail_if (p3d_point_cloud_info_is_equal (&info, &other));
  other = info;
  other.fps_n = 10;
  fail_if (p3d_point_cloud_info_is_equal (&info, &other));

  p3d_test_rng_init (&rng, 101);
  for (i = 0; i < 500; i++) {
    p3d_point_cloud_info_init (&info);
    fail_unless (p3d_point_cloud_info_set_format (&info,
            1 + p3d_test_rng_below (&rng, 4)));
    random_framerate (&rng, &info.fps_n, &info.fps_d);
    check_round_trip (type, &info);
  }

  /* as gst-launch users write them */
  check_string (type, "application/x-point-cloud,format=xyzi", TRUE);
  check_string (type, "application/x-point-cloud, format=xyzir, "
      "framerate=20/1", TRUE);
  check_string (type, "application/x-point-cloud, format=(string)xyz", TRUE);
  check_string (type, "application/x-point-cloud, format=xyzrgb", FALSE);
  check_string (type, "application/x-point-cloud, format=XYZI", FALSE);
  check_string (type, "application/x-point-cloud, format=unknown", FALSE);
  check_string (type, "application/x-point-cloud, format=(string)\"\"", FALSE);
  check_string (type, "application/x-point-cloud", FALSE);

  /* layouts: one variable tensor of whole points */
  p3d_point_cloud_info_set_format (&info, P3D_POINT_FORMAT_XYZI);
  p3d_point_cloud_info_get_layout (&info, 120000, &layout);
  fail_unless_equals_int (layout.n_tensors, 1);
  fail_unless_equals_uint64 (layout.record[0], 16);
  fail_unless_equals_uint64 (layout.size[0], 120000 * 16);
  /* no capacity given: as many points as one buffer may hold */
  p3d_point_cloud_info_get_layout (&info, 0, &layout);
  fail_unless_equals_uint64 (layout.record[0], 16);
  fail_unless_equals_uint64 (layout.size[0], RECORD_LIMIT);
  p3d_point_cloud_info_set_format (&info, P3D_POINT_FORMAT_XYZIR);
  p3d_point_cloud_info_get_layout (&info, 34720, &layout);
  fail_unless_equals_uint64 (layout.record[0], 20);
  fail_unless_equals_uint64 (layout.size[0], 694400);
  p3d_point_cloud_info_set_format (&info, P3D_POINT_FORMAT_XYZ);
  p3d_point_cloud_info_get_layout (&info, 7, &layout);
  fail_unless_equals_uint64 (layout.record[0], 12);
  fail_unless_equals_uint64 (layout.size[0], 84);
}

GST_END_TEST;

/* A buffer of one memory of @size bytes. Only its size is read (by
 * p3d_tensor_layout_check_buffer), never its bytes, so one byte stands
 * for them and limits of 2 GiB are tested without allocating them. */
static GstBuffer *
buffer_of_size (gsize size)
{
  static guint8 never_read;

  return gst_buffer_new_wrapped_full (GST_MEMORY_FLAG_READONLY, &never_read,
      size, 0, size, NULL, NULL);
}

/* Whether a buffer of @size bytes fits @layout. */
static gboolean
layout_takes (const P3dTensorLayout * layout, gsize size)
{
  GstBuffer *buffer = buffer_of_size (size);
  gboolean fits = p3d_tensor_layout_check_buffer (layout, buffer, NULL);

  gst_buffer_unref (buffer);
  return fits;
}

/* A point cloud has no size in its caps: the bound is the layout's
 * capacity, so that no buffer over 0x7ffff000 bytes goes through (filesink
 * could not write it), as it is for the media types of fixed size. */
GST_START_TEST (test_point_cloud_limit)
{
  P3dPointCloudInfo info;
  P3dTensorLayout layout;

  p3d_point_cloud_info_init (&info);
  /* xyzi: 134217472 points of 16 bytes are exactly 0x7ffff000 bytes */
  fail_unless (p3d_point_cloud_info_set_format (&info, P3D_POINT_FORMAT_XYZI));
  fail_unless_equals_uint64 (p3d_point_cloud_info_get_max_points (&info),
      134217472);
  p3d_point_cloud_info_get_layout (&info, 0, &layout);
  fail_unless (layout_takes (&layout, RECORD_LIMIT));
  fail_unless (layout_takes (&layout, RECORD_LIMIT - 16));
  fail_if (layout_takes (&layout, RECORD_LIMIT + 16));
  /* below 2^31 - 1 bytes, which was the tensor limit, yet past the bound */
  fail_if (layout_takes (&layout, G_MAXINT32 - 15));
  /* a buffer that is not whole points is still refused for that */
  fail_if (layout_takes (&layout, RECORD_LIMIT - 8));

  /* xyz: 178956629 points of 12 bytes are 2147479548 bytes, 4 below the
   * bound; one point more is past it */
  fail_unless (p3d_point_cloud_info_set_format (&info, P3D_POINT_FORMAT_XYZ));
  fail_unless_equals_uint64 (p3d_point_cloud_info_get_max_points (&info),
      178956629);
  p3d_point_cloud_info_get_layout (&info, 0, &layout);
  fail_unless_equals_uint64 (layout.size[0], 2147479548);
  fail_unless (layout_takes (&layout, 2147479548));
  fail_if (layout_takes (&layout, 2147479560));

  /* xyzir: 107373977 points of 20 bytes (2147479540 bytes) */
  fail_unless (p3d_point_cloud_info_set_format (&info, P3D_POINT_FORMAT_XYZIR));
  fail_unless_equals_uint64 (p3d_point_cloud_info_get_max_points (&info),
      107373977);
  p3d_point_cloud_info_get_layout (&info, 0, &layout);
  fail_unless (layout_takes (&layout, 2147479540));
  fail_if (layout_takes (&layout, 2147479560));

  /* a capacity given by the producer stays its own */
  p3d_point_cloud_info_get_layout (&info, 1000, &layout);
  fail_unless_equals_uint64 (layout.size[0], 20000);
}

GST_END_TEST;

GST_START_TEST (test_voxels_defaults_and_set)
{
  const MediaType *type = &media_types[VOXELS];
  P3dVoxelsInfo info, other;
  P3dVoxelGrid grid;
  const gdouble size[3] = { 0.16, 0.16, 4.0 };
  const gdouble range[6] = { 0.0, -39.68, -3.0, 69.12, 39.68, 1.0 };
  const gdouble bad_size[3] = { 0.16, 0.0, 4.0 };
  const gdouble bad_range[6] = { 0.0, -39.68, -3.0, 0.0, 39.68, 1.0 };
  guint i;

  p3d_voxels_info_init (&info);
  fail_unless_equals_int (info.finfo->format, P3D_POINT_FORMAT_UNKNOWN);
  fail_unless_equals_int (info.max_voxels, 0);
  fail_unless_equals_int (info.max_points, 0);
  for (i = 0; i < 3; i++) {
    fail_unless_equals_int (info.grid.grid[i], 0);
    fail_unless (info.grid.voxel_size[i] == 0.0);
  }
  for (i = 0; i < 6; i++)
    fail_unless (info.grid.range[i] == 0.0);
  fail_unless_equals_int (info.fps_n, 0);
  fail_unless_equals_int (info.fps_d, 1);
  ASSERT_CRITICAL (fail_unless (p3d_voxels_info_to_caps (&info) == NULL));

  fail_unless (p3d_voxel_grid_set (&grid, size, range));
  fail_unless_equals_int (grid.grid[0], 432);
  fail_unless_equals_int (grid.grid[1], 496);
  fail_unless_equals_int (grid.grid[2], 1);
  fail_unless (memcmp (grid.voxel_size, size, sizeof (size)) == 0);
  fail_unless (memcmp (grid.range, range, sizeof (range)) == 0);
  fail_if (p3d_voxel_grid_set (&grid, bad_size, range));
  fail_if (p3d_voxel_grid_set (&grid, size, bad_range));
  fail_unless_equals_int (grid.grid[0], 432);

  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 40000, 32,
          size, range));
  fail_unless_equals_int (P3D_VOXELS_INFO_CHANNELS (&info), 4);
  fail_unless_equals_int (info.max_voxels, 40000);
  fail_unless_equals_int (info.max_points, 32);
  fail_unless_equals_int (info.grid.grid[0], 432);
  check_round_trip (type, &info);

  /* refusals leave the info as it was */
  other = info;
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_UNKNOWN, 40000, 32,
          size, range));
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 0, 32, size,
          range));
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI,
          P3D_VOXELS_MAX_VOXELS + 1, 1, size, range));
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 40000, 0, size,
          range));
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 1,
          P3D_VOXELS_MAX_POINTS + 1, size, range));
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI,
          P3D_VOXELS_MAX_VOXELS, 32, size, range));
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 40000, 32,
          bad_size, range));
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 40000, 32,
          size, bad_range));
  fail_unless (p3d_voxels_info_is_equal (&info, &other));

  /* is_equal sees every field */
  other = info;
  other.max_voxels++;
  fail_if (p3d_voxels_info_is_equal (&info, &other));
  other = info;
  other.max_points++;
  fail_if (p3d_voxels_info_is_equal (&info, &other));
  other = info;
  other.finfo = p3d_point_format_get_info (P3D_POINT_FORMAT_XYZIR);
  fail_if (p3d_voxels_info_is_equal (&info, &other));
  other = info;
  other.grid.grid[2] = 2;
  fail_if (p3d_voxels_info_is_equal (&info, &other));
  other = info;
  other.grid.voxel_size[1] = 0.2;
  fail_if (p3d_voxels_info_is_equal (&info, &other));
  other = info;
  other.grid.range[5] = 2.0;
  fail_if (p3d_voxels_info_is_equal (&info, &other));
  other = info;
  other.fps_n = 10;
  fail_if (p3d_voxels_info_is_equal (&info, &other));
}

GST_END_TEST;

/* Whether voxels caps @caps with effective-range set to @value (text)
 * are accepted. */
static gboolean
effective_range_accepted (const GstCaps * caps, const gchar * value)
{
  GstCaps *copy = gst_caps_copy (caps);
  GValue array = G_VALUE_INIT;
  P3dVoxelsInfo info;
  gboolean accepted;

  g_value_init (&array, GST_TYPE_ARRAY);
  fail_unless (gst_value_deserialize (&array, value), "%s", value);
  gst_structure_take_value (gst_caps_get_structure (copy, 0),
      "effective-range", &array);
  accepted = p3d_voxels_info_from_caps (&info, copy);
  gst_caps_unref (copy);
  return accepted;
}

/* A range that is not a whole number of voxels: the grid is
 * still round((max - min) / size), and the caps carry the box its cells
 * cover, which from_caps() checks when present. */
GST_START_TEST (test_voxels_effective_range)
{
  const MediaType *type = &media_types[VOXELS];
  /* x: 2.5 cells of 0.4 round to 3 (ends at 1.2, past max); y: 3.33 cells
   * of 0.3 round to 3 (ends at 0.9, before max); z whole */
  const gdouble size[3] = { 0.4, 0.3, 4.0 };
  const gdouble range[6] = { 0.0, 0.0, -3.0, 1.0, 1.0, 1.0 };
  const gdouble expected[6] = { 0.0, 0.0, -3.0, 1.2, 0.9, 1.0 };
  const gdouble kitti_size[3] = { 0.16, 0.16, 4.0 };
  const gdouble kitti[6] = { 0.0, -39.68, -3.0, 69.12, 39.68, 1.0 };
  P3dVoxelGrid grid;
  P3dVoxelsInfo info, parsed;
  gdouble effective[6];
  const GValue *array;
  GstCaps *caps;
  GstStructure *s;
  gchar *str;
  guint i;

  fail_unless (p3d_voxel_grid_set (&grid, size, range));
  fail_unless_equals_int (grid.grid[0], 3);
  fail_unless_equals_int (grid.grid[1], 3);
  fail_if (p3d_voxel_grid_is_whole (&grid));
  p3d_voxel_grid_get_effective_range (&grid, effective);
  for (i = 0; i < 6; i++)
    fail_unless (fabs (effective[i] - expected[i]) < 1e-12, "[%u] = %.17g",
        i, effective[i]);

  /* a whole range gives itself back, bit for bit */
  fail_unless (p3d_voxel_grid_set (&grid, kitti_size, kitti));
  fail_unless (p3d_voxel_grid_is_whole (&grid));
  p3d_voxel_grid_get_effective_range (&grid, effective);
  fail_unless (memcmp (effective, kitti, sizeof (kitti)) == 0);

  p3d_voxels_info_init (&info);
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 100, 8,
          size, range));
  caps = p3d_voxels_info_to_caps (&info);
  array = gst_structure_get_value (gst_caps_get_structure (caps, 0),
      "effective-range");
  fail_unless (array != NULL && gst_value_array_get_size (array) == 6);
  for (i = 0; i < 6; i++)
    fail_unless (fabs (g_value_get_double (gst_value_array_get_value (array,
                    i)) - expected[i]) < 1e-12);
  /* through text and back */
  str = gst_caps_to_string (caps);
  check_string (type, str, TRUE);
  check_round_trip (type, &info);
  fail_unless (p3d_voxels_info_from_caps (&parsed, caps));
  fail_unless (p3d_voxels_info_is_equal (&parsed, &info));
  g_free (str);

  /* written by hand to the precision of text: accepted; as the range, or
   * any other box: refused */
  s = gst_caps_get_structure (caps, 0);
  gst_structure_remove_field (s, "effective-range");
  str = gst_caps_to_string (caps);
  check_string (type, str, TRUE);
  g_free (str);
  fail_unless (effective_range_accepted (caps,
          "<0.0,0.0,-3.0,1.2000000000,0.9,1.0>"));
  fail_if (effective_range_accepted (caps, "<0.0,0.0,-3.0,1.0,1.0,1.0>"));
  fail_if (effective_range_accepted (caps, "<0.0,0.0,-3.0,1.2,0.9>"));
  fail_if (effective_range_accepted (caps, "<0.0,0.0,-3.0,1.2,0.9,1.0001>"));
  fail_if (effective_range_accepted (caps, "<0,0,-3,1,0,1>"));
  gst_caps_unref (caps);
}

GST_END_TEST;

GST_START_TEST (test_voxels_random)
{
  const MediaType *type = &media_types[VOXELS];
  P3dTestRng rng;
  guint i, a;

  p3d_test_rng_init (&rng, 202);
  for (i = 0; i < 2000; i++) {
    P3dVoxelsInfo info;
    P3dPointFormat format = 1 + p3d_test_rng_below (&rng, 4);
    guint channels = p3d_point_format_get_info (format)->channels;
    gboolean small = p3d_test_rng_below (&rng, 2);
    guint max_voxels = 1 + p3d_test_rng_below (&rng,
        small ? 200000 : P3D_VOXELS_MAX_VOXELS);
    guint max_points = 1 + p3d_test_rng_below (&rng,
        small ? 64 : P3D_VOXELS_MAX_POINTS);
    /* points, num-points, coords (4 x int32) and the count */
    gboolean valid = (guint64) max_voxels * (max_points * channels * 4 + 4 +
        16) + 4 <= RECORD_LIMIT;
    gdouble size[3], range[6];
    guint cells[3];

    random_grid (&rng, 3000, size, range, cells);
    p3d_voxels_info_init (&info);
    fail_unless (p3d_voxels_info_set (&info, format, max_voxels, max_points,
            size, range) == valid, "%u voxels of %u points of %u channels",
        max_voxels, max_points, channels);
    if (!valid)
      continue;
    for (a = 0; a < 3; a++)
      fail_unless_equals_int (info.grid.grid[a], cells[a]);
    random_framerate (&rng, &info.fps_n, &info.fps_d);
    check_round_trip (type, &info);
  }
}

GST_END_TEST;

GST_START_TEST (test_voxels_limits)
{
  const MediaType *type = &media_types[VOXELS];
  P3dVoxelsInfo info;
  const gdouble size[3] = { 1.0, 1.0, 1.0 };
  const gdouble range[6] = { 0.0, -1e6, -2147483647.0,
    2147483647.0, 1e6, 0.0
  };
  const gdouble too_many[6] = { 0.0, 0.0, 0.0, 2147483648.0, 1.0, 1.0 };
  const gdouble tiny[3] = { 1e-3, 1e-3, 1e-3 };
  const gdouble unit[6] = { -0.5, -0.5, -0.5, 0.5, 0.5, 0.5 };

  /* the most cells an axis may have, and one more */
  p3d_voxels_info_init (&info);
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZ, 1, 1, size,
          range));
  fail_unless_equals_int (info.grid.grid[0], G_MAXINT32);
  fail_unless_equals_int (info.grid.grid[1], 2000000);
  fail_unless_equals_int (info.grid.grid[2], G_MAXINT32);
  check_round_trip (type, &info);
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZ, 1, 1, size,
          too_many));

  /* the largest sizes */
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI,
          P3D_VOXELS_MAX_VOXELS, 1, tiny, unit));
  fail_unless_equals_int (info.grid.grid[0], 1000);
  check_round_trip (type, &info);
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZIR, 1,
          P3D_VOXELS_MAX_POINTS, tiny, unit));
  check_round_trip (type, &info);
  /* the record at its limit: 226623 x (591 x 4 x 4 + 20) + 4 bytes is
   * 0x7ffff000; one voxel more, or one point more per voxel, is past it */
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI,
          226623, 591, tiny, unit));
  check_round_trip (type, &info);
  fail_unless_equals_uint64 (p3d_voxels_get_record_size (226623, 591, 4),
      RECORD_LIMIT);
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI,
          226624, 591, tiny, unit));
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI,
          226623, 592, tiny, unit));
  /* xyz at its limit too: 226623 x (788 x 3 x 4 + 20) + 4 */
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZ,
          226623, 788, tiny, unit));
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZ,
          226624, 788, tiny, unit));
  /* a points tensor below 2 GiB (2147467264 bytes) whose record is not:
   * 2150088688 bytes */
  fail_if (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI,
          131071, 1024, tiny, unit));
  fail_unless_equals_uint64 (p3d_voxels_get_record_size (131071, 1024, 4),
      G_GUINT64_CONSTANT (2150088688));
}

GST_END_TEST;

GST_START_TEST (test_voxels_caps_fields)
{
  /* sizes */
  check_patch (VOXELS, "max-voxels=1", TRUE);
  check_patch (VOXELS, "max-voxels=0", FALSE);
  check_patch (VOXELS, "max-voxels=-1", FALSE);
  check_patch (VOXELS, "max-voxels=-2147483648", FALSE);
  check_patch (VOXELS, "max-voxels=4194304, max-points=1", TRUE);
  check_patch (VOXELS, "max-voxels=4194305, max-points=1", FALSE);
  check_patch (VOXELS, "max-voxels=2147483647, max-points=1", FALSE);
  check_patch (VOXELS, "max-points=1", TRUE);
  check_patch (VOXELS, "max-points=0", FALSE);
  check_patch (VOXELS, "max-points=-32", FALSE);
  check_patch (VOXELS, "max-points=1024, max-voxels=1", TRUE);
  check_patch (VOXELS, "max-points=1025, max-voxels=1", FALSE);
  /* the record: at 0x7ffff000 bytes, not past it */
  check_patch (VOXELS, "max-voxels=226623, max-points=591", TRUE);
  check_patch (VOXELS, "max-voxels=226624, max-points=591", FALSE);
  check_patch (VOXELS, "max-voxels=226623, max-points=592", FALSE);
  check_patch (VOXELS, "max-voxels=131071, max-points=1024", FALSE);
  /* 1737443 x (76 x 4 x 4 + 20) + 4 is the limit too */
  check_patch (VOXELS, "max-voxels=1737443, max-points=76", TRUE);
  check_patch (VOXELS, "max-voxels=1737444, max-points=76", FALSE);

  /* format and channels must agree */
  check_patch (VOXELS, "format=xyz, channels=3", TRUE);
  check_patch (VOXELS, "format=xyzit, channels=5", TRUE);
  check_patch (VOXELS, "format=xyzir, channels=5", TRUE);
  check_patch (VOXELS, "channels=5", FALSE);
  check_patch (VOXELS, "channels=3", FALSE);
  check_patch (VOXELS, "format=xyzir", FALSE);
  check_patch (VOXELS, "format=xyz", FALSE);
  check_patch (VOXELS, "channels=0", FALSE);
  check_patch (VOXELS, "channels=-4", FALSE);
  check_patch (VOXELS, "channels=65", FALSE);
  check_patch (VOXELS, "format=xyzw", FALSE);
  check_patch (VOXELS, "format=XYZI", FALSE);
  check_patch (VOXELS, "format=unknown", FALSE);

  /* grid against range / voxel-size, one axis at a time */
  check_patch (VOXELS, "grid=<431,496,1>", FALSE);
  check_patch (VOXELS, "grid=<433,496,1>", FALSE);
  check_patch (VOXELS, "grid=<432,495,1>", FALSE);
  check_patch (VOXELS, "grid=<432,497,1>", FALSE);
  check_patch (VOXELS, "grid=<432,496,2>", FALSE);
  check_patch (VOXELS, "grid=<432,496,0>", FALSE);
  check_patch (VOXELS, "grid=<-432,496,1>", FALSE);
  check_patch (VOXELS, "voxel-size=<0.16,0.16,2.0>", FALSE);
  check_patch (VOXELS, "voxel-size=<0.16,0.16,2.0>, grid=<432,496,2>", TRUE);
  check_patch (VOXELS, "voxel-size=<0.32,0.16,4.0>", FALSE);
  check_patch (VOXELS, "voxel-size=<0.32,0.16,4.0>, grid=<216,496,1>", TRUE);
  check_patch (VOXELS, "range=<0.0,-39.68,-3.0,69.12,39.68,5.0>", FALSE);
  check_patch (VOXELS, "range=<0.0,-39.68,-3.0,69.12,39.68,5.0>, "
      "grid=<432,496,2>", TRUE);
  /* round(): a cell a little larger or smaller than the extent */
  check_patch (VOXELS, "voxel-size=<0.16,0.16,3.0>", TRUE);
  check_patch (VOXELS, "voxel-size=<0.16,0.16,6.0>", TRUE);
  check_patch (VOXELS, "voxel-size=<0.16,0.16,9.0>, grid=<432,496,0>", FALSE);
  /* zero, negative and huge cell counts */
  check_patch (VOXELS, "voxel-size=<0.0,0.16,4.0>", FALSE);
  check_patch (VOXELS, "voxel-size=<-0.16,0.16,4.0>", FALSE);
  check_patch (VOXELS, "voxel-size=<-0.16,0.16,4.0>, "
      "range=<69.12,-39.68,-3.0,0.0,39.68,1.0>", FALSE);
  check_patch (VOXELS, "range=<0.0,-39.68,-3.0,0.0,39.68,1.0>", FALSE);
  check_patch (VOXELS, "range=<69.12,-39.68,-3.0,0.0,39.68,1.0>", FALSE);
  check_patch (VOXELS, "voxel-size=<1e-9,0.16,4.0>, "
      "grid=<2147483647,496,1>", FALSE);

  /* arrays of the wrong length */
  check_patch (VOXELS, "grid=<432,496>", FALSE);
  check_patch (VOXELS, "grid=<432,496,1,1>", FALSE);
  check_patch (VOXELS, "grid=(int)<>", FALSE);
  check_patch (VOXELS, "voxel-size=<0.16,0.16>", FALSE);
  check_patch (VOXELS, "voxel-size=<0.16,0.16,4.0,4.0>", FALSE);
  check_patch (VOXELS, "range=<0.0,-39.68,-3.0,69.12,39.68>", FALSE);
  check_patch (VOXELS, "range=<0.0,-39.68,-3.0,69.12,39.68,1.0,1.0>", FALSE);
  check_patch (VOXELS, "range=<0.0,-39.68,-3.0>", FALSE);

  /* numbers as users write them: integers among doubles, floats */
  check_patch (VOXELS, "voxel-size=<0.16,0.16,4>", TRUE);
  check_patch (VOXELS, "range=<0,-39.68,-3,69.12,39.68,1>", TRUE);
  check_patch (VOXELS, "voxel-size=<(float)0.16,(float)0.16,(float)4.0>", TRUE);
  /* a grid counts cells: integers only */
  check_patch (VOXELS, "grid=<432,496,1.0>", FALSE);
  check_patch (VOXELS, "grid=<432.0,496.0,1.0>", FALSE);
}

GST_END_TEST;

/* A double array field of @type's full caps with entry @index replaced by
 * each non-finite value: refused. */
static void
check_non_finite (guint t, const gchar * field)
{
  const MediaType *type = &media_types[t];
  GstCaps *full = caps_parse (type->full);
  const GValue *array = gst_structure_get_value (gst_caps_get_structure (full,
          0), field);
  const gdouble bad[] = { INFINITY, -INFINITY, NAN };
  guint n = gst_value_array_get_size (array), i, j, k;

  for (i = 0; i < n; i++) {
    for (k = 0; k < G_N_ELEMENTS (bad); k++) {
      GValue changed = G_VALUE_INIT;
      gchar *what;

      gst_value_array_init (&changed, n);
      for (j = 0; j < n; j++) {
        GValue e = G_VALUE_INIT;

        g_value_init (&e, G_TYPE_DOUBLE);
        g_value_set_double (&e, j == i ? bad[k] :
            g_value_get_double (gst_value_array_get_value (array, j)));
        gst_value_array_append_and_take_value (&changed, &e);
      }
      what = g_strdup_printf ("[%u] = %g", i, bad[k]);
      check_value (type, field, &changed, FALSE, what);
      g_free (what);
      g_value_unset (&changed);
    }
  }
  gst_caps_unref (full);
}

GST_START_TEST (test_non_finite)
{
  check_non_finite (VOXELS, "voxel-size");
  check_non_finite (VOXELS, "range");
  check_non_finite (PILLARS, "voxel-size");
  check_non_finite (PILLARS, "range");
  check_non_finite (BEV_FEATURES, "range");
  /* as text too */
  check_patch (VOXELS, "voxel-size=<0.16,0.16,inf>", FALSE);
  check_patch (VOXELS, "voxel-size=<nan,0.16,4.0>", FALSE);
  check_patch (VOXELS, "range=<0.0,-39.68,-3.0,1e400,39.68,1.0>", FALSE);
  check_patch (BEV_FEATURES, "range=<-54.0,-54.0,-10.0,54.0,54.0,inf>", FALSE);
}

GST_END_TEST;

GST_START_TEST (test_user_caps_strings)
{
  P3dVoxelsInfo voxels;
  P3dPillarsInfo pillars;
  P3dCameraFeaturesInfo camera;
  P3dBevFeaturesInfo bev;
  P3dBoxes3dInfo boxes3d;
  P3dBoxes2dInfo boxes2d;
  GstCaps *caps;

  /* KITTI pillars, as written in the voxelize brief */
  caps = caps_parse ("application/x-voxels, format=xyzi, channels=4, "
      "max-voxels=40000, max-points=32, grid=<432,496,1>, "
      "voxel-size=<0.16,0.16,4.0>, range=<0.0,-39.68,-3.0,69.12,39.68,1.0>");
  fail_unless (p3d_voxels_info_from_caps (&voxels, caps));
  gst_caps_unref (caps);
  fail_unless_equals_int (voxels.finfo->format, P3D_POINT_FORMAT_XYZI);
  fail_unless_equals_int (voxels.max_voxels, 40000);
  fail_unless_equals_int (voxels.max_points, 32);
  fail_unless_equals_int (voxels.grid.grid[0], 432);
  fail_unless_equals_int (voxels.grid.grid[1], 496);
  fail_unless_equals_int (voxels.grid.grid[2], 1);
  fail_unless (voxels.grid.voxel_size[0] == 0.16);
  fail_unless (voxels.grid.voxel_size[2] == 4.0);
  fail_unless (voxels.grid.range[1] == -39.68);
  fail_unless (voxels.grid.range[3] == 69.12);
  fail_unless_equals_int (voxels.fps_n, 0);
  fail_unless_equals_int (voxels.fps_d, 1);

  /* the same with integers among the doubles, and without spaces */
  caps = caps_parse ("application/x-voxels,format=xyzi,channels=4,"
      "max-voxels=40000,max-points=32,grid=<432,496,1>,"
      "voxel-size=<0.16,0.16,4>,range=<0,-39.68,-3,69.12,39.68,1>");
  {
    P3dVoxelsInfo mixed;

    fail_unless (p3d_voxels_info_from_caps (&mixed, caps));
    fail_unless (p3d_voxels_info_is_equal (&mixed, &voxels));
  }
  gst_caps_unref (caps);

  /* nuScenes CenterPoint voxels */
  caps = caps_parse ("application/x-voxels, format=xyzir, channels=5, "
      "max-voxels=60000, max-points=10, grid=<1024,1024,40>, "
      "voxel-size=<0.1,0.1,0.2>, range=<-51.2,-51.2,-5,51.2,51.2,3>, "
      "framerate=20/1");
  fail_unless (p3d_voxels_info_from_caps (&voxels, caps));
  gst_caps_unref (caps);
  fail_unless_equals_int (voxels.grid.grid[2], 40);
  fail_unless_equals_int (voxels.fps_n, 20);

  caps = caps_parse ("application/x-pillar-features, format=F16, "
      "features=pointpillars-10, max-voxels=40000, max-points=32, "
      "grid=<432,496,1>, voxel-size=<0.16,0.16,4>, "
      "range=<0,-39.68,-3,69.12,39.68,1>");
  fail_unless (p3d_pillars_info_from_caps (&pillars, caps));
  gst_caps_unref (caps);
  fail_unless_equals_int (pillars.format, P3D_DATA_FORMAT_F16);
  fail_unless_equals_int (pillars.features, P3D_FEATURE_SET_POINTPILLARS_10);
  fail_unless_equals_int (pillars.channels, 10);
  fail_unless_equals_int (pillars.grid.grid[0], 432);

  caps = caps_parse ("application/x-camera-features, format=F32, cameras=6, "
      "channels=80, depth-bins=118, width=88, height=32");
  fail_unless (p3d_camera_features_info_from_caps (&camera, caps));
  gst_caps_unref (caps);
  fail_unless_equals_int (camera.cameras, 6);
  fail_unless_equals_int (camera.channels, 80);
  fail_unless_equals_int (camera.depth_bins, 118);
  fail_unless_equals_int (camera.width, 88);
  fail_unless_equals_int (camera.height, 32);

  caps = caps_parse ("application/x-bev-features, format=F32, channels=80, "
      "width=180, height=180");
  fail_unless (p3d_bev_features_info_from_caps (&bev, caps));
  gst_caps_unref (caps);
  fail_if (bev.has_range);
  fail_unless_equals_int (bev.layout, P3D_BEV_FEATURES_LAYOUT_YX);
  caps = caps_parse ("application/x-bev-features, format=F16, channels=80, "
      "width=180, height=180, range=<-54,-54,-5,54,54,3>");
  fail_unless (p3d_bev_features_info_from_caps (&bev, caps));
  gst_caps_unref (caps);
  fail_unless (bev.has_range);
  fail_unless (bev.range[0] == -54.0 && bev.range[5] == 3.0);

  caps = caps_parse ("application/x-boxes3d, max-boxes=500");
  fail_unless (p3d_boxes3d_info_from_caps (&boxes3d, caps));
  gst_caps_unref (caps);
  fail_unless_equals_int (boxes3d.max_boxes, 500);
  caps = caps_parse ("application/x-boxes2d,max-boxes=300,framerate=30/1");
  fail_unless (p3d_boxes2d_info_from_caps (&boxes2d, caps));
  gst_caps_unref (caps);
  fail_unless_equals_int (boxes2d.max_boxes, 300);
  fail_unless_equals_int (boxes2d.fps_n, 30);
}

GST_END_TEST;

GST_START_TEST (test_pillars)
{
  const MediaType *type = &media_types[PILLARS];
  P3dPillarsInfo info, other;
  P3dVoxelsInfo voxels;
  P3dTestRng rng;
  const gdouble size[3] = { 0.16, 0.16, 4.0 };
  const gdouble range[6] = { 0.0, -39.68, -3.0, 69.12, 39.68, 1.0 };
  guint i;

  p3d_pillars_info_init (&info);
  fail_unless_equals_int (info.format, P3D_DATA_FORMAT_UNKNOWN);
  fail_unless_equals_int (info.features, P3D_FEATURE_SET_UNKNOWN);
  fail_unless_equals_int (info.channels, 0);
  fail_unless_equals_int (info.max_voxels, 0);
  fail_unless_equals_int (info.max_points, 0);
  fail_unless_equals_int (info.grid.grid[0], 0);
  fail_unless_equals_int (info.fps_n, 0);
  fail_unless_equals_int (info.fps_d, 1);
  ASSERT_CRITICAL (fail_unless (p3d_pillars_info_to_caps (&info) == NULL));

  /* from a voxels description */
  p3d_voxels_info_init (&voxels);
  fail_unless (p3d_voxels_info_set (&voxels, P3D_POINT_FORMAT_XYZI, 40000, 32,
          size, range));
  fail_if (p3d_pillars_info_set (&info, P3D_DATA_FORMAT_UNKNOWN,
          P3D_FEATURE_SET_POINTPILLARS_10, &voxels));
  fail_if (p3d_pillars_info_set (&info, P3D_DATA_FORMAT_F32,
          P3D_FEATURE_SET_UNKNOWN, &voxels));
  fail_unless (p3d_pillars_info_set (&info, P3D_DATA_FORMAT_F32,
          P3D_FEATURE_SET_MMDET3D_9, &voxels));
  fail_unless_equals_int (info.channels, 9);
  fail_unless_equals_int (info.max_voxels, 40000);
  fail_unless_equals_int (info.max_points, 32);
  fail_unless (p3d_voxel_grid_is_equal (&info.grid, &voxels.grid));
  check_round_trip (type, &info);

  other = info;
  other.format = P3D_DATA_FORMAT_F16;
  fail_if (p3d_pillars_info_is_equal (&info, &other));
  other = info;
  other.features = P3D_FEATURE_SET_POINTPILLARS_11;
  fail_if (p3d_pillars_info_is_equal (&info, &other));
  other = info;
  other.max_voxels = 1;
  fail_if (p3d_pillars_info_is_equal (&info, &other));
  other = info;
  other.max_points = 1;
  fail_if (p3d_pillars_info_is_equal (&info, &other));
  other = info;
  other.grid.range[0] = -1.0;
  fail_if (p3d_pillars_info_is_equal (&info, &other));
  other = info;
  other.fps_n = 5;
  fail_if (p3d_pillars_info_is_equal (&info, &other));

  p3d_test_rng_init (&rng, 303);
  for (i = 0; i < 1000; i++) {
    gdouble vsize[3], vrange[6];
    guint cells[3];

    random_grid (&rng, 2000, vsize, vrange, cells);
    fail_unless (p3d_voxels_info_set (&voxels,
            1 + p3d_test_rng_below (&rng, 4),
            1 + p3d_test_rng_below (&rng, 200000),
            1 + p3d_test_rng_below (&rng, 100), vsize, vrange));
    p3d_pillars_info_init (&info);
    fail_unless (p3d_pillars_info_set (&info,
            1 + p3d_test_rng_below (&rng, 2),
            p3d_test_rng_below (&rng, 3), &voxels));
    random_framerate (&rng, &info.fps_n, &info.fps_d);
    check_round_trip (type, &info);
  }

  check_patch (PILLARS, "format=F16", TRUE);
  check_patch (PILLARS, "format=F64", FALSE);
  check_patch (PILLARS, "format=f32", FALSE);
  check_patch (PILLARS, "features=mmdet3d-9", TRUE);
  check_patch (PILLARS, "features=pointpillars-11", TRUE);
  check_patch (PILLARS, "features=pointpillars-12", FALSE);
  check_patch (PILLARS, "features=PointPillars-10", FALSE);
  check_patch (PILLARS, "max-voxels=0", FALSE);
  check_patch (PILLARS, "max-voxels=-1", FALSE);
  check_patch (PILLARS, "max-voxels=4194304, max-points=1", TRUE);
  check_patch (PILLARS, "max-voxels=4194305, max-points=1", FALSE);
  check_patch (PILLARS, "max-points=0", FALSE);
  check_patch (PILLARS, "max-points=1024, max-voxels=1", TRUE);
  check_patch (PILLARS, "max-points=1025, max-voxels=1", FALSE);
  /* the F32 record: 226623 x (215 x 11 x 4 + 16) + 4 is 0x7ffff000 bytes;
   * one voxel or one point more is past it */
  check_patch (PILLARS, "features=pointpillars-11, max-voxels=226623, "
      "max-points=215", TRUE);
  check_patch (PILLARS, "features=pointpillars-11, max-voxels=226624, "
      "max-points=215", FALSE);
  check_patch (PILLARS, "features=pointpillars-11, max-voxels=226623, "
      "max-points=216", FALSE);
  /* a features tensor below 2 GiB (2147459072 bytes) whose record is
   * not (2148221668 bytes) */
  check_patch (PILLARS, "features=pointpillars-11, max-voxels=47662, "
      "max-points=1024", FALSE);
  /* F16: 1737443 x (61 x 10 x 2 + 16) + 4 is the limit */
  check_patch (PILLARS, "format=F16, max-voxels=1737443, max-points=61", TRUE);
  check_patch (PILLARS, "format=F16, max-voxels=1737444, max-points=61", FALSE);
  check_patch (PILLARS, "grid=<432,496,2>", FALSE);
  check_patch (PILLARS, "grid=<432,496>", FALSE);
  check_patch (PILLARS, "voxel-size=<0.16,0.16>", FALSE);
  check_patch (PILLARS, "range=<0.0,-39.68,-3.0,69.12,39.68,1.0,0.0>", FALSE);
  check_patch (PILLARS, "voxel-size=<0.16,0.16,4>, "
      "range=<0,-39.68,-3,69.12,39.68,1>", TRUE);
}

GST_END_TEST;

/* pillars_info_set() accepts any valid voxels description, so the caps it
 * leads to must be readable: set -> to_caps -> from_caps. */
GST_START_TEST (test_pillars_set_gives_readable_caps)
{
  P3dVoxelsInfo voxels;
  P3dPillarsInfo info, parsed;
  const gdouble size[3] = { 0.16, 0.16, 4.0 };
  const gdouble range[6] = { 0.0, -39.68, -3.0, 69.12, 39.68, 1.0 };
  GstCaps *caps;
  gchar *str;

  /* a valid voxels caps: 2^22 * 16 * 4 channels * 4 bytes = 1 GiB */
  p3d_voxels_info_init (&voxels);
  fail_unless (p3d_voxels_info_set (&voxels, P3D_POINT_FORMAT_XYZI,
          P3D_VOXELS_MAX_VOXELS, 16, size, range));
  /* pointpillars-11 in F32 would be 2^22 * 16 * 11 * 4 = 2.75 GiB */
  p3d_pillars_info_init (&info);
  if (p3d_pillars_info_set (&info, P3D_DATA_FORMAT_F32,
          P3D_FEATURE_SET_POINTPILLARS_11, &voxels)) {
    caps = p3d_pillars_info_to_caps (&info);
    str = gst_caps_to_string (caps);
    fail_unless (p3d_pillars_info_from_caps (&parsed, caps),
        "p3d_pillars_info_set() accepted what from_caps() refuses: %s", str);
    g_free (str);
    gst_caps_unref (caps);
  }
}

GST_END_TEST;

/* The record limit counts the features' bytes: an F16 tensor is half the
 * size of the F32 one, as camera and BEV features count it. */
GST_START_TEST (test_pillars_f16_limit)
{
  /* 2^22 * 12 * 11 * 2 bytes = 1.03 GiB of F16 */
  check_patch (PILLARS, "format=F16, features=pointpillars-11, "
      "max-voxels=4194304, max-points=12", TRUE);
  /* 2^22 * (22 * 11 * 2 + 16) + 4 = 2097152004 bytes; with 23 points,
   * 2189426692 */
  check_patch (PILLARS, "format=F16, features=pointpillars-11, "
      "max-voxels=4194304, max-points=22", TRUE);
  check_patch (PILLARS, "format=F16, features=pointpillars-11, "
      "max-voxels=4194304, max-points=23", FALSE);
}

GST_END_TEST;

GST_START_TEST (test_camera_features)
{
  const MediaType *type = &media_types[CAMERA_FEATURES];
  P3dCameraFeaturesInfo info, other;
  P3dTestRng rng;
  guint i, accepted = 0, refused = 0;

  p3d_camera_features_info_init (&info);
  fail_unless_equals_int (info.format, P3D_DATA_FORMAT_UNKNOWN);
  fail_unless_equals_int (info.cameras, 0);
  fail_unless_equals_int (info.channels, 0);
  fail_unless_equals_int (info.depth_bins, 0);
  fail_unless_equals_int (info.width, 0);
  fail_unless_equals_int (info.height, 0);
  fail_unless_equals_int (info.fps_n, 0);
  fail_unless_equals_int (info.fps_d, 1);
  ASSERT_CRITICAL (fail_unless (p3d_camera_features_info_to_caps (&info) ==
          NULL));

  /* random sizes; the caps are read back when the buffer (both tensors)
   * fits the bound */
  p3d_test_rng_init (&rng, 404);
  for (i = 0; i < 2000; i++) {
    GstCaps *caps;
    guint64 pixels, element;
    gboolean valid;
    gboolean big = p3d_test_rng_below (&rng, 2);

    p3d_camera_features_info_init (&info);
    info.format = 1 + p3d_test_rng_below (&rng, 2);
    info.cameras = 1 + p3d_test_rng_below (&rng, 64);
    info.channels = 1 + p3d_test_rng_below (&rng, big ? 65536 : 256);
    info.depth_bins = 1 + p3d_test_rng_below (&rng, big ? 65536 : 200);
    info.width = 1 + p3d_test_rng_below (&rng, big ? 8192 : 200);
    info.height = 1 + p3d_test_rng_below (&rng, big ? 8192 : 100);
    random_framerate (&rng, &info.fps_n, &info.fps_d);
    element = p3d_data_format_get_size (info.format);
    pixels = (guint64) info.cameras * info.width * info.height;
    valid = pixels * (info.channels + info.depth_bins) * element <=
        RECORD_LIMIT;
    if (valid) {
      check_round_trip (type, &info);
      accepted++;
    } else {
      caps = p3d_camera_features_info_to_caps (&info);
      check_caps (type, caps, FALSE, "a buffer over the bound");
      gst_caps_unref (caps);
      refused++;
    }
  }
  fail_unless (accepted > 100 && refused > 100);

  p3d_camera_features_info_init (&info);
  info.format = P3D_DATA_FORMAT_F32;
  info.cameras = info.channels = info.depth_bins = info.width = info.height = 1;
  check_round_trip (type, &info);
  other = info;
  other.format = P3D_DATA_FORMAT_F16;
  fail_if (p3d_camera_features_info_is_equal (&info, &other));
  other = info;
  other.cameras = 2;
  fail_if (p3d_camera_features_info_is_equal (&info, &other));
  other = info;
  other.channels = 2;
  fail_if (p3d_camera_features_info_is_equal (&info, &other));
  other = info;
  other.depth_bins = 2;
  fail_if (p3d_camera_features_info_is_equal (&info, &other));
  other = info;
  other.width = 2;
  fail_if (p3d_camera_features_info_is_equal (&info, &other));
  other = info;
  other.height = 2;
  fail_if (p3d_camera_features_info_is_equal (&info, &other));
  other = info;
  other.fps_n = 2;
  fail_if (p3d_camera_features_info_is_equal (&info, &other));

  check_patch (CAMERA_FEATURES, "cameras=1", TRUE);
  check_patch (CAMERA_FEATURES, "cameras=64", TRUE);
  check_patch (CAMERA_FEATURES, "cameras=0", FALSE);
  check_patch (CAMERA_FEATURES, "cameras=65", FALSE);
  check_patch (CAMERA_FEATURES, "cameras=-6", FALSE);
  check_patch (CAMERA_FEATURES, "channels=1", TRUE);
  check_patch (CAMERA_FEATURES, "channels=65536, cameras=1", TRUE);
  check_patch (CAMERA_FEATURES, "channels=0", FALSE);
  check_patch (CAMERA_FEATURES, "channels=65537", FALSE);
  check_patch (CAMERA_FEATURES, "channels=-80", FALSE);
  check_patch (CAMERA_FEATURES, "depth-bins=1", TRUE);
  check_patch (CAMERA_FEATURES, "depth-bins=65536, cameras=1", TRUE);
  check_patch (CAMERA_FEATURES, "depth-bins=0", FALSE);
  check_patch (CAMERA_FEATURES, "depth-bins=65537", FALSE);
  check_patch (CAMERA_FEATURES, "depth-bins=-1", FALSE);
  check_patch (CAMERA_FEATURES, "width=1", TRUE);
  check_patch (CAMERA_FEATURES, "width=8192, cameras=1", TRUE);
  check_patch (CAMERA_FEATURES, "width=0", FALSE);
  check_patch (CAMERA_FEATURES, "width=8193", FALSE);
  check_patch (CAMERA_FEATURES, "width=-88", FALSE);
  check_patch (CAMERA_FEATURES, "height=1", TRUE);
  check_patch (CAMERA_FEATURES, "height=8192, cameras=1", TRUE);
  check_patch (CAMERA_FEATURES, "height=0", FALSE);
  check_patch (CAMERA_FEATURES, "height=8193", FALSE);
  check_patch (CAMERA_FEATURES, "height=-32", FALSE);
  check_patch (CAMERA_FEATURES, "format=F32", TRUE);
  check_patch (CAMERA_FEATURES, "format=F64", FALSE);
  check_patch (CAMERA_FEATURES, "format=f16", FALSE);
  /* The buffer, both tensors together, at most 0x7ffff000 bytes. That is
   * 4096 x 524287, a prime larger than any field may be, so no caps hits
   * it exactly: 7884 x 512 pixels of 80 + 53 F32 values are 2147475456
   * bytes, 4096 below it; one depth bin or channel more is past it. */
  check_patch (CAMERA_FEATURES, "format=F32, cameras=1, width=7884, "
      "height=512, channels=80, depth-bins=53", TRUE);
  check_patch (CAMERA_FEATURES, "format=F32, cameras=1, width=7884, "
      "height=512, channels=80, depth-bins=54", FALSE);
  check_patch (CAMERA_FEATURES, "format=F32, cameras=1, width=7884, "
      "height=512, channels=81, depth-bins=53", FALSE);
  /* F16 counts 2 bytes a value: 7073 x 256 x 593 x 2 = 2147475968 */
  check_patch (CAMERA_FEATURES, "format=F16, cameras=1, width=7073, "
      "height=256, channels=300, depth-bins=293", TRUE);
  check_patch (CAMERA_FEATURES, "format=F16, cameras=1, width=7073, "
      "height=256, channels=300, depth-bins=294", FALSE);
  /* each tensor below 2 GiB (1879048192 bytes), both together not */
  check_patch (CAMERA_FEATURES, "format=F32, cameras=1, width=8192, "
      "height=8192, channels=7, depth-bins=7", FALSE);
  /* 8192 x 8192 pixels of 6 + 1 F32 values: 1879048192 bytes; of 7 + 1,
   * 2^31 */
  check_patch (CAMERA_FEATURES, "format=F32, cameras=1, width=8192, "
      "height=8192, channels=6, depth-bins=1", TRUE);
  check_patch (CAMERA_FEATURES, "format=F32, cameras=1, width=8192, "
      "height=8192, channels=7, depth-bins=1", FALSE);
  check_patch (CAMERA_FEATURES, "format=F16, cameras=64, width=8192, "
      "height=8192, channels=65536, depth-bins=65536", FALSE);
}

GST_END_TEST;

/* The optional image fields that camencode writes: read back exactly (the
 * transforms as doubles, through text too), all three or none, image-aug
 * 6 finite numbers a camera, the sizes in range; and the img_aug matrix
 * bevpool makes of them. */
GST_START_TEST (test_camera_features_image)
{
  const MediaType *type = &media_types[CAMERA_FEATURES];
  const gchar *aug6 = "image-aug=(double)<0.48,0,-32,0,0.48,-176,"
      "0.48,0,-32,0,0.48,-176,0.48,0,-32,0,0.48,-176,"
      "0.48,0,-32,0,0.48,-176,0.48,0,-32,0,0.48,-176,"
      "0.48,0,-32,0,0.48,-176>";
  P3dCameraFeaturesInfo info, other;
  P3dTestRng rng;
  GValue array = G_VALUE_INIT, number = G_VALUE_INIT;
  gdouble matrix[16];
  gchar *patch;
  guint i, k;

  p3d_test_rng_init (&rng, 405);
  for (i = 0; i < 200; i++) {
    p3d_camera_features_info_init (&info);
    info.format = 1 + p3d_test_rng_below (&rng, 2);
    info.cameras = 1 + p3d_test_rng_below (&rng, 64);
    info.channels = 1 + p3d_test_rng_below (&rng, 100);
    info.depth_bins = 1 + p3d_test_rng_below (&rng, 100);
    info.width = 1 + p3d_test_rng_below (&rng, 50);
    info.height = 1 + p3d_test_rng_below (&rng, 20);
    info.has_image = TRUE;
    info.image_width = 1 + p3d_test_rng_below (&rng, 65536);
    info.image_height = 1 + p3d_test_rng_below (&rng, 65536);
    for (k = 0; k < info.cameras * 6; k++)
      info.image_aug[k / 6][k % 6] = (p3d_test_rng_u32 (&rng) - 2e9) / 3e5 /
          (1 + p3d_test_rng_below (&rng, 1000));
    check_round_trip (type, &info);
    other = info;
    other.image_aug[info.cameras - 1][5] += 1.0 / 1024;
    fail_if (p3d_camera_features_info_is_equal (&info, &other));
    fail_if (p3d_camera_features_info_image_is_equal (&info, &other));
    other = info;
    other.image_width++;
    fail_if (p3d_camera_features_info_is_equal (&info, &other));
    other = info;
    other.has_image = FALSE;
    fail_if (p3d_camera_features_info_is_equal (&info, &other));
    fail_if (p3d_camera_features_info_image_is_equal (&info, &other));
  }

  patch = g_strdup_printf ("image-width=704, image-height=256, %s", aug6);
  check_patch (CAMERA_FEATURES, patch, TRUE);
  g_free (patch);
  patch = g_strdup_printf ("image-width=704, %s", aug6);
  check_patch (CAMERA_FEATURES, patch, FALSE);
  g_free (patch);
  patch = g_strdup_printf ("image-height=256, %s", aug6);
  check_patch (CAMERA_FEATURES, patch, FALSE);
  g_free (patch);
  check_patch (CAMERA_FEATURES, "image-width=704, image-height=256", FALSE);
  patch = g_strdup_printf ("image-width=0, image-height=256, %s", aug6);
  check_patch (CAMERA_FEATURES, patch, FALSE);
  g_free (patch);
  patch = g_strdup_printf ("image-width=704, image-height=65537, %s", aug6);
  check_patch (CAMERA_FEATURES, patch, FALSE);
  g_free (patch);
  /* 5 cameras' numbers for 6 cameras */
  check_patch (CAMERA_FEATURES, "image-width=704, image-height=256, "
      "image-aug=(double)<1,0,0,0,1,0,1,0,0,0,1,0,1,0,0,0,1,0,"
      "1,0,0,0,1,0,1,0,0,0,1,0>", FALSE);
  check_patch (CAMERA_FEATURES, "image-width=704, image-height=256, "
      "image-aug=(string)identity", FALSE);

  /* a non-finite number */
  p3d_camera_features_info_init (&info);
  info.format = P3D_DATA_FORMAT_F32;
  info.cameras = 1;
  info.channels = info.depth_bins = info.width = info.height = 1;
  info.has_image = TRUE;
  info.image_width = 704;
  info.image_height = 256;
  info.image_aug[0][0] = info.image_aug[0][4] = 0.48;
  info.image_aug[0][2] = -32;
  info.image_aug[0][5] = -176;
  check_round_trip (type, &info);
  {
    GstCaps *caps = p3d_camera_features_info_to_caps (&info);

    gst_value_array_init (&array, 6);
    g_value_init (&number, G_TYPE_DOUBLE);
    for (k = 0; k < 6; k++) {
      g_value_set_double (&number, k == 3 ? INFINITY : 0.5);
      gst_value_array_append_value (&array, &number);
    }
    gst_structure_set_value (gst_caps_get_structure (caps, 0), "image-aug",
        &array);
    check_caps (type, caps, FALSE, "an infinite image-aug");
    g_value_unset (&number);
    g_value_unset (&array);
    gst_caps_unref (caps);
  }

  p3d_camera_features_info_get_img_aug (&info, 0, matrix);
  for (k = 0; k < 16; k++) {
    const gdouble want[16] = { 0.48, 0, 0, -32, 0, 0.48, 0, -176, 0, 0, 1, 0,
      0, 0, 0, 1
    };

    fail_unless (matrix[k] == want[k], "img_aug[%u] is %g, not %g", k,
        matrix[k], want[k]);
  }
}

GST_END_TEST;

GST_START_TEST (test_bev_features)
{
  const MediaType *type = &media_types[BEV_FEATURES];
  P3dBevFeaturesInfo info, other;
  P3dTestRng rng;
  GstCaps *caps;
  guint i, a, accepted = 0, refused = 0;

  p3d_bev_features_info_init (&info);
  fail_unless_equals_int (info.format, P3D_DATA_FORMAT_UNKNOWN);
  fail_unless_equals_int (info.channels, 0);
  fail_unless_equals_int (info.width, 0);
  fail_unless_equals_int (info.height, 0);
  fail_unless_equals_int (info.layout, P3D_BEV_FEATURES_LAYOUT_YX);
  fail_if (info.has_range);
  for (a = 0; a < 6; a++)
    fail_unless (info.range[a] == 0.0);
  fail_unless_equals_int (info.fps_n, 0);
  fail_unless_equals_int (info.fps_d, 1);
  ASSERT_CRITICAL (fail_unless (p3d_bev_features_info_to_caps (&info) == NULL));

  p3d_test_rng_init (&rng, 505);
  for (i = 0; i < 2000; i++) {
    guint64 size;
    gboolean big = p3d_test_rng_below (&rng, 2);

    p3d_bev_features_info_init (&info);
    info.format = 1 + p3d_test_rng_below (&rng, 2);
    info.channels = 1 + p3d_test_rng_below (&rng, big ? 65536 : 512);
    info.width = 1 + p3d_test_rng_below (&rng, big ? 16384 : 512);
    info.height = 1 + p3d_test_rng_below (&rng, big ? 16384 : 512);
    info.layout = p3d_test_rng_below (&rng, 2);
    info.has_range = p3d_test_rng_below (&rng, 2);
    if (info.has_range) {
      for (a = 0; a < 3; a++) {
        info.range[a] = rng_double (&rng, -100.0, 0.0);
        info.range[3 + a] = info.range[a] + rng_double (&rng,
            a == 2 ? 0.0 : 0.1, 200.0);
      }
    }
    random_framerate (&rng, &info.fps_n, &info.fps_d);
    size = (guint64) info.channels * info.width * info.height *
        p3d_data_format_get_size (info.format);
    if (size <= RECORD_LIMIT) {
      check_round_trip (type, &info);
      accepted++;
    } else {
      caps = p3d_bev_features_info_to_caps (&info);
      check_caps (type, caps, FALSE, "a buffer over the bound");
      gst_caps_unref (caps);
      refused++;
    }
  }
  fail_unless (accepted > 100 && refused > 100);

  /* the range is compared only when present */
  p3d_bev_features_info_init (&info);
  info.format = P3D_DATA_FORMAT_F32;
  info.channels = info.width = info.height = 1;
  other = info;
  other.range[0] = 5.0;
  fail_unless (p3d_bev_features_info_is_equal (&info, &other));
  other.has_range = TRUE;
  fail_if (p3d_bev_features_info_is_equal (&info, &other));
  info.has_range = TRUE;
  fail_if (p3d_bev_features_info_is_equal (&info, &other));
  info.range[0] = 5.0;
  fail_unless (p3d_bev_features_info_is_equal (&info, &other));
  other = info;
  other.channels = 2;
  fail_if (p3d_bev_features_info_is_equal (&info, &other));
  other = info;
  other.width = 2;
  fail_if (p3d_bev_features_info_is_equal (&info, &other));
  other = info;
  other.height = 2;
  fail_if (p3d_bev_features_info_is_equal (&info, &other));
  other = info;
  other.format = P3D_DATA_FORMAT_F16;
  fail_if (p3d_bev_features_info_is_equal (&info, &other));
  other = info;
  other.fps_n = 3;
  fail_if (p3d_bev_features_info_is_equal (&info, &other));
  other = info;
  other.layout = P3D_BEV_FEATURES_LAYOUT_XY;
  fail_if (p3d_bev_features_info_is_equal (&info, &other));

  /* the optional layout: yx (the default) or xy */
  check_patch (BEV_FEATURES, "layout=xy", TRUE);
  check_patch (BEV_FEATURES, "layout=yx", TRUE);
  check_patch (BEV_FEATURES, "layout=XY", FALSE);
  check_patch (BEV_FEATURES, "layout=zyx", FALSE);
  check_patch (BEV_FEATURES, "layout=(string)\"\"", FALSE);
  caps = caps_patched (type, "layout=xy");
  fail_unless (p3d_bev_features_info_from_caps (&info, caps));
  fail_unless_equals_int (info.layout, P3D_BEV_FEATURES_LAYOUT_XY);
  gst_caps_unref (caps);

  check_patch (BEV_FEATURES, "channels=1", TRUE);
  check_patch (BEV_FEATURES, "channels=65536, width=1, height=1", TRUE);
  check_patch (BEV_FEATURES, "channels=0", FALSE);
  check_patch (BEV_FEATURES, "channels=65537, width=1, height=1", FALSE);
  check_patch (BEV_FEATURES, "channels=-1", FALSE);
  check_patch (BEV_FEATURES, "width=1", TRUE);
  check_patch (BEV_FEATURES, "width=16384", TRUE);
  check_patch (BEV_FEATURES, "width=0", FALSE);
  check_patch (BEV_FEATURES, "width=16385", FALSE);
  check_patch (BEV_FEATURES, "width=-180", FALSE);
  check_patch (BEV_FEATURES, "height=1", TRUE);
  check_patch (BEV_FEATURES, "height=16384", TRUE);
  check_patch (BEV_FEATURES, "height=0", FALSE);
  check_patch (BEV_FEATURES, "height=16385", FALSE);
  check_patch (BEV_FEATURES, "height=-180", FALSE);
  check_patch (BEV_FEATURES, "format=F16", TRUE);
  check_patch (BEV_FEATURES, "format=F64", FALSE);
  /* The buffer at most 0x7ffff000 bytes, 4096 x 524287 (a prime larger
   * than any field may be, so no caps hits it exactly): 7 channels of
   * 12288 x 12483 in F16 are 2147475456 bytes, 4096 below it; one row
   * more is past it. */
  check_patch (BEV_FEATURES, "format=F16, channels=7, width=12288, "
      "height=12483", TRUE);
  check_patch (BEV_FEATURES, "format=F16, channels=7, width=12288, "
      "height=12484", FALSE);
  /* 7 x 16381 x 4682 x 4 = 2147483576 bytes: below 2^31 - 1, the tensor
   * limit, yet past the bound */
  check_patch (BEV_FEATURES, "format=F32, channels=7, width=16381, "
      "height=4682", FALSE);
  check_patch (BEV_FEATURES, "format=F32, channels=7, width=16381, "
      "height=4681", TRUE);
  check_patch (BEV_FEATURES, "format=F32, channels=1, width=16384, "
      "height=16384", TRUE);
  check_patch (BEV_FEATURES, "format=F32, channels=2, width=16384, "
      "height=16384", FALSE);
  check_patch (BEV_FEATURES, "format=F16, channels=3, width=16384, "
      "height=16384", TRUE);
  check_patch (BEV_FEATURES, "format=F16, channels=4, width=16384, "
      "height=16384", FALSE);

  /* the optional range: present and valid, or refused */
  check_patch (BEV_FEATURES, "range=<-54,-54,-5,54,54,3>", TRUE);
  check_patch (BEV_FEATURES, "range=<-54.0,-54.0,0.0,54.0,54.0,0.0>", TRUE);
  check_patch (BEV_FEATURES, "range=<-54.0,-54.0,1.0,54.0,54.0,0.0>", FALSE);
  check_patch (BEV_FEATURES, "range=<54.0,-54.0,-5.0,54.0,54.0,3.0>", FALSE);
  check_patch (BEV_FEATURES, "range=<54.0,-54.0,-5.0,-54.0,54.0,3.0>", FALSE);
  check_patch (BEV_FEATURES, "range=<-54.0,54.0,-5.0,54.0,54.0,3.0>", FALSE);
  check_patch (BEV_FEATURES, "range=<-54.0,54.0,-5.0,54.0,-54.0,3.0>", FALSE);
  check_patch (BEV_FEATURES, "range=<-54.0,-54.0,54.0,54.0,3.0>", FALSE);
  check_patch (BEV_FEATURES, "range=<-54.0,-54.0,-5.0,54.0,54.0,3.0,0.0>",
      FALSE);
  check_patch (BEV_FEATURES, "range=<-54.0,-54.0,54.0,54.0>", FALSE);
  check_patch (BEV_FEATURES, "range=(string)everywhere", FALSE);
}

GST_END_TEST;

static void
check_boxes (guint t)
{
  check_patch (t, "max-boxes=1", TRUE);
  check_patch (t, "max-boxes=1048576", TRUE);
  check_patch (t, "max-boxes=1048577", FALSE);
  check_patch (t, "max-boxes=0", FALSE);
  check_patch (t, "max-boxes=-1", FALSE);
  check_patch (t, "max-boxes=-2147483648", FALSE);
  check_patch (t, "max-boxes=2147483647", FALSE);
}

GST_START_TEST (test_boxes)
{
  P3dBoxes3dInfo info3, other3;
  P3dBoxes2dInfo info2, other2;
  P3dTestRng rng;
  guint i;

  p3d_boxes3d_info_init (&info3);
  fail_unless_equals_int (info3.max_boxes, 0);
  fail_unless_equals_int (info3.fps_n, 0);
  fail_unless_equals_int (info3.fps_d, 1);
  ASSERT_CRITICAL (fail_unless (p3d_boxes3d_info_to_caps (&info3) == NULL));
  p3d_boxes2d_info_init (&info2);
  fail_unless_equals_int (info2.max_boxes, 0);
  fail_unless_equals_int (info2.fps_n, 0);
  fail_unless_equals_int (info2.fps_d, 1);
  ASSERT_CRITICAL (fail_unless (p3d_boxes2d_info_to_caps (&info2) == NULL));

  p3d_test_rng_init (&rng, 606);
  for (i = 0; i < 1000; i++) {
    p3d_boxes3d_info_init (&info3);
    info3.max_boxes = 1 + p3d_test_rng_below (&rng, P3D_BOXES_MAX_BOXES);
    random_framerate (&rng, &info3.fps_n, &info3.fps_d);
    check_round_trip (&media_types[BOXES3D], &info3);
    p3d_boxes2d_info_init (&info2);
    info2.max_boxes = 1 + p3d_test_rng_below (&rng, P3D_BOXES_MAX_BOXES);
    random_framerate (&rng, &info2.fps_n, &info2.fps_d);
    check_round_trip (&media_types[BOXES2D], &info2);
  }
  info3.max_boxes = 1;
  check_round_trip (&media_types[BOXES3D], &info3);
  info3.max_boxes = P3D_BOXES_MAX_BOXES;
  check_round_trip (&media_types[BOXES3D], &info3);
  other3 = info3;
  other3.max_boxes--;
  fail_if (p3d_boxes3d_info_is_equal (&info3, &other3));
  other3 = info3;
  /* (a random framerate may have the largest denominator) */
  other3.fps_d += other3.fps_d < G_MAXINT ? 1 : -1;
  fail_if (p3d_boxes3d_info_is_equal (&info3, &other3));
  info2.max_boxes = P3D_BOXES_MAX_BOXES;
  check_round_trip (&media_types[BOXES2D], &info2);
  other2 = info2;
  other2.max_boxes = 1;
  fail_if (p3d_boxes2d_info_is_equal (&info2, &other2));

  check_boxes (BOXES3D);
  check_boxes (BOXES2D);
}

GST_END_TEST;

/* The velocity of 3D boxes: a boolean field, false when absent (caps and
 * files from before it keep their meaning), written only when true; a
 * third tensor of two floats a record. */
GST_START_TEST (test_boxes_velocity)
{
  static const gchar *const refused[] = {
    "application/x-boxes3d, max-boxes=5, velocity=(int)1",
    "application/x-boxes3d, max-boxes=5, velocity=(string)yes",
    "application/x-boxes3d, max-boxes=5, velocity={ true, false }",
  };
  P3dBoxes3dInfo info, other;
  P3dTensorLayout layout;
  GstCaps *caps;
  gchar *text;
  guint i;

  p3d_boxes3d_info_init (&info);
  fail_if (info.velocity);
  caps = caps_parse ("application/x-boxes3d, max-boxes=5");
  fail_unless (p3d_boxes3d_info_from_caps (&info, caps));
  gst_caps_unref (caps);
  fail_if (info.velocity);
  p3d_boxes3d_info_get_layout (&info, &layout);
  fail_unless_equals_int (layout.n_tensors, 2);
  caps = caps_parse ("application/x-boxes3d, max-boxes=5, velocity=false");
  fail_unless (p3d_boxes3d_info_from_caps (&info, caps));
  gst_caps_unref (caps);
  fail_if (info.velocity);
  caps = caps_parse ("application/x-boxes3d, max-boxes=500, velocity=true");
  fail_unless (p3d_boxes3d_info_from_caps (&info, caps));
  gst_caps_unref (caps);
  fail_unless (info.velocity);
  p3d_boxes3d_info_get_layout (&info, &layout);
  fail_unless_equals_int (layout.n_tensors, 3);
  fail_unless_equals_uint64 (layout.size[P3D_BOXES_TENSOR_RECORDS], 18000);
  fail_unless_equals_uint64 (layout.size[P3D_BOXES_TENSOR_COUNT], 4);
  fail_unless_equals_uint64 (layout.size[P3D_BOXES_TENSOR_VELOCITY], 4000);
  fail_unless_equals_uint64 (p3d_tensor_layout_get_total_size (&layout), 22004);
  /* round trips, and velocity=true only when true */
  caps = p3d_boxes3d_info_to_caps (&info);
  text = gst_caps_to_string (caps);
  fail_unless (strstr (text, "velocity=(boolean)true") != NULL, "%s", text);
  g_free (text);
  fail_unless (p3d_boxes3d_info_from_caps (&other, caps));
  gst_caps_unref (caps);
  fail_unless (p3d_boxes3d_info_is_equal (&info, &other));
  other.velocity = FALSE;
  fail_if (p3d_boxes3d_info_is_equal (&info, &other));
  caps = p3d_boxes3d_info_to_caps (&other);
  text = gst_caps_to_string (caps);
  fail_unless (strstr (text, "velocity") == NULL, "%s", text);
  g_free (text);
  gst_caps_unref (caps);
  for (i = 0; i < G_N_ELEMENTS (refused); i++) {
    caps = caps_parse (refused[i]);
    fail_if (p3d_boxes3d_info_from_caps (&info, caps), "%s", refused[i]);
    gst_caps_unref (caps);
  }
}

GST_END_TEST;

/* ---- format tables ---- */

GST_START_TEST (test_point_formats)
{
  static const struct
  {
    P3dPointFormat format;
    const gchar *name;
    guint channels;
    gint intensity, time, ring;
  } expected[] = {
    {P3D_POINT_FORMAT_XYZ, "xyz", 3, -1, -1, -1},
    {P3D_POINT_FORMAT_XYZI, "xyzi", 4, 3, -1, -1},
    {P3D_POINT_FORMAT_XYZIT, "xyzit", 5, 3, 4, -1},
    {P3D_POINT_FORMAT_XYZIR, "xyzir", 5, 3, -1, 4},
  };
  const gchar *unknown[] = { "", "unknown", "XYZ", "xyzi ", "xyzrgb", "x",
    "xyziw", "F32"
  };
  GstCaps *templ = caps_parse (P3D_POINT_CLOUD_CAPS_ALL);
  GstCaps *voxels_templ = caps_parse (P3D_VOXELS_CAPS_ALL);
  /* the elements' format property: the caps strings, and "auto" for 0 */
  GEnumClass *enum_class = g_type_class_ref (P3D_TYPE_POINT_FORMAT);
  guint i;

  fail_unless_equals_int (enum_class->n_values, G_N_ELEMENTS (expected) + 1);
  fail_unless_equals_int (g_enum_get_value_by_nick (enum_class,
          "auto")->value, P3D_POINT_FORMAT_AUTO);
  fail_unless_equals_int (P3D_POINT_FORMAT_AUTO, P3D_POINT_FORMAT_UNKNOWN);
  for (i = 0; i < G_N_ELEMENTS (expected); i++) {
    const P3dPointFormatInfo *finfo =
        p3d_point_format_get_info (expected[i].format);
    GEnumValue *value = g_enum_get_value (enum_class, expected[i].format);
    gchar *str;
    GstCaps *caps;

    fail_unless (value != NULL);
    fail_unless_equals_string (value->value_nick, expected[i].name);
    fail_unless_equals_string (p3d_point_format_to_string (expected[i].format),
        expected[i].name);
    fail_unless_equals_int (p3d_point_format_from_string (expected[i].name),
        expected[i].format);
    fail_unless (finfo != NULL);
    fail_unless_equals_int (finfo->format, expected[i].format);
    fail_unless_equals_string (finfo->name, expected[i].name);
    fail_unless_equals_int (finfo->channels, expected[i].channels);
    fail_unless_equals_int (finfo->intensity, expected[i].intensity);
    fail_unless_equals_int (finfo->time, expected[i].time);
    fail_unless_equals_int (finfo->ring, expected[i].ring);
    /* the pad template lists it */
    str = g_strdup_printf ("%s, format=%s", P3D_MEDIA_TYPE_POINT_CLOUD,
        expected[i].name);
    caps = caps_parse (str);
    fail_unless (gst_caps_is_subset (caps, templ), "%s", str);
    gst_caps_unref (caps);
    g_free (str);
    str = g_strdup_printf ("%s, format=%s", P3D_MEDIA_TYPE_VOXELS,
        expected[i].name);
    caps = caps_parse (str);
    fail_unless (gst_caps_is_subset (caps, voxels_templ), "%s", str);
    gst_caps_unref (caps);
    g_free (str);
  }
  for (i = 0; i < G_N_ELEMENTS (unknown); i++)
    fail_unless_equals_int (p3d_point_format_from_string (unknown[i]),
        P3D_POINT_FORMAT_UNKNOWN);
  fail_unless_equals_int (p3d_point_format_from_string (NULL),
      P3D_POINT_FORMAT_UNKNOWN);
  fail_unless (p3d_point_format_to_string (P3D_POINT_FORMAT_UNKNOWN) == NULL);
  fail_unless (p3d_point_format_to_string ((P3dPointFormat) 5) == NULL);
  fail_unless (p3d_point_format_to_string ((P3dPointFormat) - 1) == NULL);
  fail_unless_equals_int (p3d_point_format_get_info
      (P3D_POINT_FORMAT_UNKNOWN)->channels, 0);
  ASSERT_CRITICAL (fail_unless (p3d_point_format_get_info ((P3dPointFormat)
              5) == NULL));
  /* the template lists nothing more */
  fail_unless_equals_int (gst_value_list_get_size (gst_structure_get_value
          (gst_caps_get_structure (templ, 0), "format")),
      G_N_ELEMENTS (expected));
  gst_caps_unref (templ);
  gst_caps_unref (voxels_templ);
  g_type_class_unref (enum_class);
}

GST_END_TEST;

GST_START_TEST (test_data_formats_and_feature_sets)
{
  static const struct
  {
    P3dFeatureSet set;
    const gchar *name;
    guint channels;
  } sets[] = {
    {P3D_FEATURE_SET_POINTPILLARS_10, "pointpillars-10", 10},
    {P3D_FEATURE_SET_MMDET3D_9, "mmdet3d-9", 9},
    {P3D_FEATURE_SET_POINTPILLARS_11, "pointpillars-11", 11},
    {P3D_FEATURE_SET_MMDET3D_11, "mmdet3d-11", 11},
  };
  const gchar *unknown[] = { "", "f32", "F64", "FP32", "F8", "float" };
  const gchar *unknown_sets[] = { "", "pointpillars", "pointpillars-9",
    "mmdet3d-10", "POINTPILLARS-10", "pointpillars-10 "
  };
  GstCaps *templ = caps_parse (P3D_PILLARS_CAPS_ALL);
  guint i;

  fail_unless_equals_int (p3d_data_format_from_string ("F32"),
      P3D_DATA_FORMAT_F32);
  fail_unless_equals_int (p3d_data_format_from_string ("F16"),
      P3D_DATA_FORMAT_F16);
  fail_unless_equals_string (p3d_data_format_to_string (P3D_DATA_FORMAT_F32),
      "F32");
  fail_unless_equals_string (p3d_data_format_to_string (P3D_DATA_FORMAT_F16),
      "F16");
  fail_unless_equals_int (p3d_data_format_get_size (P3D_DATA_FORMAT_F32), 4);
  fail_unless_equals_int (p3d_data_format_get_size (P3D_DATA_FORMAT_F16), 2);
  fail_unless_equals_int (p3d_data_format_get_size (P3D_DATA_FORMAT_UNKNOWN),
      0);
  fail_unless (p3d_data_format_to_string (P3D_DATA_FORMAT_UNKNOWN) == NULL);
  fail_unless (p3d_data_format_to_string ((P3dDataFormat) 7) == NULL);
  fail_unless_equals_int (p3d_data_format_from_string (NULL),
      P3D_DATA_FORMAT_UNKNOWN);
  for (i = 0; i < G_N_ELEMENTS (unknown); i++)
    fail_unless_equals_int (p3d_data_format_from_string (unknown[i]),
        P3D_DATA_FORMAT_UNKNOWN);

  for (i = 0; i < G_N_ELEMENTS (sets); i++) {
    gchar *str;
    GstCaps *caps;

    fail_unless_equals_string (p3d_feature_set_to_string (sets[i].set),
        sets[i].name);
    fail_unless_equals_int (p3d_feature_set_from_string (sets[i].name),
        sets[i].set);
    fail_unless_equals_int (p3d_feature_set_get_channels (sets[i].set),
        sets[i].channels);
    str = g_strdup_printf ("%s, format=F16, features=%s",
        P3D_MEDIA_TYPE_PILLAR_FEATURES, sets[i].name);
    caps = caps_parse (str);
    fail_unless (gst_caps_is_subset (caps, templ), "%s", str);
    gst_caps_unref (caps);
    g_free (str);
  }
  for (i = 0; i < G_N_ELEMENTS (unknown_sets); i++)
    fail_unless_equals_int (p3d_feature_set_from_string (unknown_sets[i]),
        P3D_FEATURE_SET_UNKNOWN);
  fail_unless_equals_int (p3d_feature_set_from_string (NULL),
      P3D_FEATURE_SET_UNKNOWN);
  fail_unless (p3d_feature_set_to_string (P3D_FEATURE_SET_UNKNOWN) == NULL);
  fail_unless (p3d_feature_set_to_string ((P3dFeatureSet) 4) == NULL);
  fail_unless_equals_int (p3d_feature_set_get_channels
      (P3D_FEATURE_SET_UNKNOWN), 0);
  fail_unless_equals_int (p3d_feature_set_get_channels ((P3dFeatureSet) 4), 0);
  gst_caps_unref (templ);
}

GST_END_TEST;

/* ---- layouts, computed by hand ---- */

GST_START_TEST (test_layouts)
{
  P3dVoxelsInfo voxels;
  P3dPillarsInfo pillars;
  P3dCameraFeaturesInfo camera;
  P3dBevFeaturesInfo bev;
  P3dBoxes3dInfo boxes3d;
  P3dBoxes2dInfo boxes2d;
  P3dTensorLayout layout;
  GstCaps *caps;
  guint i;

  /* KITTI pillars: 40000 x 32 points of xyzi float32 */
  caps = caps_parse (media_types[VOXELS].full);
  fail_unless (p3d_voxels_info_from_caps (&voxels, caps));
  gst_caps_unref (caps);
  p3d_voxels_info_get_layout (&voxels, &layout);
  fail_unless_equals_int (layout.n_tensors, 4);
  fail_unless_equals_uint64 (layout.size[P3D_VOXELS_TENSOR_POINTS],
      40000 * 32 * 4 * 4);
  fail_unless_equals_uint64 (layout.size[P3D_VOXELS_TENSOR_NUM_POINTS],
      40000 * 4);
  fail_unless_equals_uint64 (layout.size[P3D_VOXELS_TENSOR_COORDS],
      40000 * 4 * 4);
  fail_unless_equals_uint64 (layout.size[P3D_VOXELS_TENSOR_COUNT], 4);
  for (i = 0; i < 4; i++)
    fail_unless_equals_uint64 (layout.record[i], 0);
  fail_unless_equals_uint64 (p3d_tensor_layout_get_total_size (&layout),
      21280004);

  /* nuScenes CenterPoint voxels: 60000 x 10 points of xyzir */
  caps = caps_parse ("application/x-voxels, format=xyzir, channels=5, "
      "max-voxels=60000, max-points=10, grid=<1024,1024,40>, "
      "voxel-size=<0.1,0.1,0.2>, range=<-51.2,-51.2,-5,51.2,51.2,3>");
  fail_unless (p3d_voxels_info_from_caps (&voxels, caps));
  gst_caps_unref (caps);
  p3d_voxels_info_get_layout (&voxels, &layout);
  fail_unless_equals_uint64 (layout.size[0], 12000000);
  fail_unless_equals_uint64 (layout.size[1], 240000);
  fail_unless_equals_uint64 (layout.size[2], 960000);
  fail_unless_equals_uint64 (layout.size[3], 4);

  /* KITTI pillar features in each set and format */
  caps = caps_parse (media_types[PILLARS].full);
  fail_unless (p3d_pillars_info_from_caps (&pillars, caps));
  gst_caps_unref (caps);
  p3d_pillars_info_get_layout (&pillars, &layout);
  fail_unless_equals_int (layout.n_tensors, 3);
  fail_unless_equals_uint64 (layout.size[P3D_PILLARS_TENSOR_FEATURES],
      51200000);
  fail_unless_equals_uint64 (layout.size[P3D_PILLARS_TENSOR_COORDS], 640000);
  fail_unless_equals_uint64 (layout.size[P3D_PILLARS_TENSOR_COUNT], 4);
  fail_unless_equals_uint64 (p3d_tensor_layout_get_total_size (&layout),
      51840004);
  pillars.format = P3D_DATA_FORMAT_F16;
  p3d_pillars_info_get_layout (&pillars, &layout);
  fail_unless_equals_uint64 (layout.size[0], 25600000);
  pillars.features = P3D_FEATURE_SET_MMDET3D_9;
  pillars.channels = 9;
  pillars.format = P3D_DATA_FORMAT_F32;
  p3d_pillars_info_get_layout (&pillars, &layout);
  fail_unless_equals_uint64 (layout.size[0], 46080000);
  pillars.features = P3D_FEATURE_SET_POINTPILLARS_11;
  pillars.channels = 11;
  pillars.format = P3D_DATA_FORMAT_F16;
  p3d_pillars_info_get_layout (&pillars, &layout);
  fail_unless_equals_uint64 (layout.size[0], 28160000);

  /* BEVFusion nuScenes camera features, F16 and F32 */
  caps = caps_parse (media_types[CAMERA_FEATURES].full);
  fail_unless (p3d_camera_features_info_from_caps (&camera, caps));
  gst_caps_unref (caps);
  fail_unless (p3d_camera_features_info_get_layout (&camera, &layout));
  fail_unless_equals_int (layout.n_tensors, 2);
  fail_unless_equals_uint64 (layout.size[0], 6 * 32 * 88 * 80 * 2);
  fail_unless_equals_uint64 (layout.size[1], 6 * 118 * 32 * 88 * 2);
  fail_unless_equals_uint64 (layout.size[1], 3987456);
  camera.format = P3D_DATA_FORMAT_F32;
  fail_unless (p3d_camera_features_info_get_layout (&camera, &layout));
  fail_unless_equals_uint64 (layout.size[0], 5406720);
  fail_unless_equals_uint64 (layout.size[1], 7974912);
  camera.cameras = 64;
  camera.width = camera.height = 8192;
  fail_if (p3d_camera_features_info_get_layout (&camera, &layout));

  /* a 180 x 180 BEV of 80 channels */
  caps = caps_parse (media_types[BEV_FEATURES].full);
  fail_unless (p3d_bev_features_info_from_caps (&bev, caps));
  gst_caps_unref (caps);
  fail_unless (p3d_bev_features_info_get_layout (&bev, &layout));
  fail_unless_equals_int (layout.n_tensors, 1);
  fail_unless_equals_uint64 (layout.size[0], 10368000);
  fail_unless_equals_uint64 (layout.record[0], 0);
  bev.format = P3D_DATA_FORMAT_F16;
  fail_unless (p3d_bev_features_info_get_layout (&bev, &layout));
  fail_unless_equals_uint64 (layout.size[0], 5184000);
  bev.channels = 65536;
  bev.width = bev.height = 16384;
  fail_if (p3d_bev_features_info_get_layout (&bev, &layout));

  /* boxes: 36- and 24-byte records, and the count */
  p3d_boxes3d_info_init (&boxes3d);
  boxes3d.max_boxes = 500;
  p3d_boxes3d_info_get_layout (&boxes3d, &layout);
  fail_unless_equals_int (layout.n_tensors, 2);
  fail_unless_equals_uint64 (layout.size[P3D_BOXES_TENSOR_RECORDS], 18000);
  fail_unless_equals_uint64 (layout.size[P3D_BOXES_TENSOR_COUNT], 4);
  fail_unless_equals_uint64 (layout.record[0], 0);
  boxes2d.max_boxes = 100;
  p3d_boxes2d_info_get_layout (&boxes2d, &layout);
  fail_unless_equals_uint64 (layout.size[0], 2400);
  fail_unless_equals_uint64 (layout.size[1], 4);
  fail_unless_equals_int (P3D_BOX3D_RECORD_SIZE, 9 * 4);
  fail_unless_equals_int (P3D_BOX2D_RECORD_SIZE, 6 * 4);
}

GST_END_TEST;

/* The caps library logs in its own domain, which gst-check does not watch:
 * make its criticals and warnings fail a test, or satisfy ASSERT_CRITICAL,
 * as GStreamer's own do. */
static Suite *
mediatypes_suite (void)
{
  Suite *s = suite_create ("mediatypes");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_full_caps);
  tcase_add_test (tc, test_refuse_empty_any_and_other_types);
  tcase_add_test (tc, test_refuse_not_fixed);
  tcase_add_test (tc, test_refuse_missing_field);
  tcase_add_test (tc, test_refuse_wrong_type);
  tcase_add_test (tc, test_framerate);
  tcase_add_test (tc, test_point_cloud);
  tcase_add_test (tc, test_point_cloud_limit);
  tcase_add_test (tc, test_voxels_defaults_and_set);
  tcase_add_test (tc, test_voxels_random);
  tcase_add_test (tc, test_voxels_effective_range);
  tcase_add_test (tc, test_voxels_limits);
  tcase_add_test (tc, test_voxels_caps_fields);
  tcase_add_test (tc, test_non_finite);
  tcase_add_test (tc, test_user_caps_strings);
  tcase_add_test (tc, test_pillars);
  tcase_add_test (tc, test_pillars_set_gives_readable_caps);
  tcase_add_test (tc, test_pillars_f16_limit);
  tcase_add_test (tc, test_camera_features);
  tcase_add_test (tc, test_camera_features_image);
  tcase_add_test (tc, test_bev_features);
  tcase_add_test (tc, test_boxes);
  tcase_add_test (tc, test_boxes_velocity);
  tcase_add_test (tc, test_point_formats);
  tcase_add_test (tc, test_data_formats_and_feature_sets);
  tcase_add_test (tc, test_layouts);
  return s;
}

P3D_CHECK_MAIN (mediatypes);
