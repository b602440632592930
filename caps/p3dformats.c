/* The format tables of p3dformats.h. */
#include "p3dformats.h"

static const P3dPointFormatInfo point_formats[] = {
  {P3D_POINT_FORMAT_UNKNOWN, "unknown", 0, -1, -1, -1},
  {P3D_POINT_FORMAT_XYZ, "xyz", 3, -1, -1, -1},
  {P3D_POINT_FORMAT_XYZI, "xyzi", 4, 3, -1, -1},
  {P3D_POINT_FORMAT_XYZIT, "xyzit", 5, 3, 4, -1},
  {P3D_POINT_FORMAT_XYZIR, "xyzir", 5, 3, -1, 4},
};

const P3dPointFormatInfo *
p3d_point_format_get_info (P3dPointFormat format)
{
  g_return_val_if_fail ((guint) format < G_N_ELEMENTS (point_formats), NULL);
  return &point_formats[format];
}

P3dPointFormat
p3d_point_format_from_string (const gchar * name)
{
  guint i;

  if (name == NULL)
    return P3D_POINT_FORMAT_UNKNOWN;
  for (i = 1; i < G_N_ELEMENTS (point_formats); i++)
    if (g_str_equal (name, point_formats[i].name))
      return point_formats[i].format;
  return P3D_POINT_FORMAT_UNKNOWN;
}

const gchar *
p3d_point_format_to_string (P3dPointFormat format)
{
  if ((guint) format >= G_N_ELEMENTS (point_formats)
      || format == P3D_POINT_FORMAT_UNKNOWN)
    return NULL;
  return point_formats[format].name;
}

GType
p3d_point_format_get_type (void)
{
  static gsize type = 0;
  /* The nicks are the caps strings of point_formats[], so that a
   * gst-launch line names a format as the caps do. */
  static const GEnumValue values[] = {
    {P3D_POINT_FORMAT_AUTO, "Negotiated with downstream (xyzi when "
          "downstream accepts any)", "auto"},
    {P3D_POINT_FORMAT_XYZ, "x, y, z", "xyz"},
    {P3D_POINT_FORMAT_XYZI, "x, y, z, intensity (KITTI)", "xyzi"},
    {P3D_POINT_FORMAT_XYZIT, "x, y, z, intensity, time offset within the "
          "sweep in seconds", "xyzit"},
    {P3D_POINT_FORMAT_XYZIR, "x, y, z, intensity, ring (laser index, 0 the "
          "lowest; nuScenes)", "xyzir"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dPointFormat", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

P3dDataFormat
p3d_data_format_from_string (const gchar * name)
{
  if (name == NULL)
    return P3D_DATA_FORMAT_UNKNOWN;
  if (g_str_equal (name, "F32"))
    return P3D_DATA_FORMAT_F32;
  if (g_str_equal (name, "F16"))
    return P3D_DATA_FORMAT_F16;
  return P3D_DATA_FORMAT_UNKNOWN;
}

const gchar *
p3d_data_format_to_string (P3dDataFormat format)
{
  switch (format) {
    case P3D_DATA_FORMAT_F32:
      return "F32";
    case P3D_DATA_FORMAT_F16:
      return "F16";
    default:
      return NULL;
  }
}

guint
p3d_data_format_get_size (P3dDataFormat format)
{
  switch (format) {
    case P3D_DATA_FORMAT_F32:
      return 4;
    case P3D_DATA_FORMAT_F16:
      return 2;
    default:
      return 0;
  }
}

static const struct
{
  const gchar *name;
  guint channels;
} feature_sets[] = {
  {"pointpillars-10", 10},
  {"mmdet3d-9", 9},
  {"pointpillars-11", 11},
  {"mmdet3d-11", 11},
};

P3dFeatureSet
p3d_feature_set_from_string (const gchar * name)
{
  guint i;

  if (name == NULL)
    return P3D_FEATURE_SET_UNKNOWN;
  for (i = 0; i < G_N_ELEMENTS (feature_sets); i++)
    if (g_str_equal (name, feature_sets[i].name))
      return (P3dFeatureSet) i;
  return P3D_FEATURE_SET_UNKNOWN;
}

const gchar *
p3d_feature_set_to_string (P3dFeatureSet set)
{
  if (set < 0 || (guint) set >= G_N_ELEMENTS (feature_sets))
    return NULL;
  return feature_sets[set].name;
}

guint
p3d_feature_set_get_channels (P3dFeatureSet set)
{
  if (set < 0 || (guint) set >= G_N_ELEMENTS (feature_sets))
    return 0;
  return feature_sets[set].channels;
}

GType
p3d_feature_set_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_FEATURE_SET_POINTPILLARS_10, "x, y, z, i, x - mean x, y - mean y, "
          "z - mean z, x - center x, y - center y, z - center z (OpenPCDet, "
          "NVIDIA CUDA-PointPillars)", "pointpillars-10"},
    {P3D_FEATURE_SET_MMDET3D_9, "pointpillars-10 without z - center z "
          "(mmdetection3d)", "mmdet3d-9"},
    {P3D_FEATURE_SET_POINTPILLARS_11, "pointpillars-10 then the distance "
          "to the sensor, sqrt (x^2 + y^2 + z^2)", "pointpillars-11"},
    {P3D_FEATURE_SET_MMDET3D_11, "x, y, z, the point's channels 3 and 4 "
          "(intensity and time of xyzit), x - mean x, y - mean y, z - mean z, "
          "x - center x, y - center y, z - center z (mmdetection3d "
          "PillarFeatureNet, in_channels=5, legacy=False)", "mmdet3d-11"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dFeatureSet", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}
