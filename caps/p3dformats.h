/* gst-perception: the format tables behind the media types' string fields.
 *
 * Point formats name the float32 channels of one point, in order; data
 * formats name the element type of a feature tensor. */
#ifndef __P3D_FORMATS_H__
#define __P3D_FORMATS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

typedef enum
{
  P3D_POINT_FORMAT_UNKNOWN = 0,
  P3D_POINT_FORMAT_XYZ,
  P3D_POINT_FORMAT_XYZI,
  P3D_POINT_FORMAT_XYZIT,
  P3D_POINT_FORMAT_XYZIR,
} P3dPointFormat;

/* As the value of an element's format property, UNKNOWN means that no
 * format is chosen: caps negotiation picks one (see P3D_TYPE_POINT_FORMAT). */
#define P3D_POINT_FORMAT_AUTO P3D_POINT_FORMAT_UNKNOWN

/* xyzi first: the format a caps fixation picks when nothing decides is the
 * one PointPillars models take. */
#define P3D_POINT_FORMATS_ALL "{ xyzi, xyz, xyzit, xyzir }"

/**
 * P3dPointFormatInfo:
 * @format: the format
 * @name: its caps string, one letter per channel
 * @channels: float32 values per point
 * @intensity: channel index of the intensity, or -1
 * @time: channel index of the time offset, or -1
 * @ring: channel index of the laser ring, or -1
 *
 * x, y and z are always channels 0, 1 and 2.
 */
typedef struct
{
  P3dPointFormat format;
  const gchar *name;
  guint channels;
  gint intensity;
  gint time;
  gint ring;
} P3dPointFormatInfo;

const P3dPointFormatInfo *p3d_point_format_get_info (P3dPointFormat format);
P3dPointFormat p3d_point_format_from_string (const gchar * name);
const gchar *p3d_point_format_to_string (P3dPointFormat format);

/* The GEnum of the point formats, for elements' format properties: the
 * nicks are the caps strings, and 0 is "auto" (P3D_POINT_FORMAT_AUTO). */
#define P3D_TYPE_POINT_FORMAT (p3d_point_format_get_type ())
GType p3d_point_format_get_type (void);

typedef enum
{
  P3D_DATA_FORMAT_UNKNOWN = 0,
  P3D_DATA_FORMAT_F32,
  P3D_DATA_FORMAT_F16,
} P3dDataFormat;

#define P3D_DATA_FORMATS_ALL "{ F32, F16 }"

P3dDataFormat p3d_data_format_from_string (const gchar * name);
const gchar *p3d_data_format_to_string (P3dDataFormat format);
/* Bytes per element: 4 or 2 (0 for UNKNOWN). */
guint p3d_data_format_get_size (P3dDataFormat format);

typedef enum
{
  P3D_FEATURE_SET_UNKNOWN = -1,
  P3D_FEATURE_SET_POINTPILLARS_10 = 0,
  P3D_FEATURE_SET_MMDET3D_9 = 1,
  P3D_FEATURE_SET_POINTPILLARS_11 = 2,
  P3D_FEATURE_SET_MMDET3D_11 = 3,
} P3dFeatureSet;

#define P3D_FEATURE_SETS_ALL \
    "{ pointpillars-10, mmdet3d-9, pointpillars-11, mmdet3d-11 }"

#define P3D_TYPE_FEATURE_SET (p3d_feature_set_get_type ())
GType p3d_feature_set_get_type (void);

P3dFeatureSet p3d_feature_set_from_string (const gchar * name);
const gchar *p3d_feature_set_to_string (P3dFeatureSet set);
/* Channels per point of the feature set: 10, 9, 11 or 11 (0 for UNKNOWN). */
guint p3d_feature_set_get_channels (P3dFeatureSet set);

G_END_DECLS

#endif /* __P3D_FORMATS_H__ */
