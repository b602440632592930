/* What one camera of cameratestsrc sees of the street: see
 * cameratestsrc-render.h. */
#include <math.h>
#include <string.h>

#include "box_overlap.h"
#include "cameratestsrc-render.h"
#include "p3dstreet-private.h"

/* What a pixel's ray hit, besides a box index (>= 0). */
#define HIT_GROUND (-1)
#define HIT_NOTHING (-2)

/* Projections are padded by this many pixels before their pixels are
 * tested, so that rounding never leaves out a pixel whose ray hits. */
#define BOUNDS_PADDING 2

/* Light: the part that reaches a face whatever its direction, the rest
 * following Lambert's law. */
#define AMBIENT 0.38f
#define DIFFUSE 0.62f

/* Shadows on the ground are cast when the sun is at least this high
 * (degrees); lower, they would reach the horizon. */
#define SHADOW_MIN_ELEVATION 5.0

/* Haze: a hit at this distance is half its colour, half the horizon's. */
#define HAZE_DISTANCE 400.0f

/* The ground farther than this (metres along the optical axis, a ray a
 * hair below the horizon) is not drawn: the sky is, so that every value
 * stays finite. */
#define FAR_LIMIT 1e7f

/* Ground textures beyond this far from the origin are not drawn (their
 * cell indices would not fit an integer; the haze hides them anyway). */
#define TEXTURE_LIMIT 1e7f

/* Triangular noise from two bytes has this standard deviation in
 * levels: sqrt (2 (256^2 - 1) / 12). */
#define TRIANGLE_SIGMA 104.5166

/* Keys of the appearance hashes, so that objects, walls and the ground
 * draw from distinct numbers. */
#define LOOK_OBJECT G_GUINT64_CONSTANT (0)
#define LOOK_WALL (G_GUINT64_CONSTANT (1) << 40)
#define LOOK_GROUND (G_GUINT64_CONSTANT (2) << 40)

typedef struct
{
  gfloat r, g, b;
} Rgb;

/* Palettes: car paints, facades, skin, clothes, helmets, bicycle frames. */
static const Rgb car_paints[] = {
  {0.86f, 0.86f, 0.85f}, {0.07f, 0.07f, 0.08f}, {0.62f, 0.63f, 0.66f},
  {0.34f, 0.35f, 0.37f}, {0.66f, 0.08f, 0.07f}, {0.10f, 0.21f, 0.55f},
  {0.07f, 0.10f, 0.26f}, {0.14f, 0.36f, 0.20f}, {0.82f, 0.66f, 0.10f},
  {0.72f, 0.62f, 0.46f},
};

static const Rgb facades[] = {
  {0.56f, 0.27f, 0.20f}, {0.76f, 0.68f, 0.55f}, {0.58f, 0.58f, 0.56f},
  {0.83f, 0.80f, 0.76f}, {0.30f, 0.30f, 0.33f}, {0.78f, 0.66f, 0.38f},
};

static const Rgb skins[] = {
  {0.88f, 0.72f, 0.60f}, {0.74f, 0.54f, 0.40f}, {0.55f, 0.38f, 0.26f},
  {0.35f, 0.24f, 0.17f},
};

static const Rgb clothes[] = {
  {0.75f, 0.10f, 0.12f}, {0.12f, 0.30f, 0.65f}, {0.15f, 0.50f, 0.25f},
  {0.90f, 0.75f, 0.15f}, {0.85f, 0.85f, 0.85f}, {0.10f, 0.10f, 0.11f},
  {0.50f, 0.20f, 0.55f}, {0.95f, 0.45f, 0.10f},
};

static const Rgb trousers[] = {
  {0.12f, 0.18f, 0.35f}, {0.08f, 0.08f, 0.09f}, {0.40f, 0.40f, 0.42f},
  {0.55f, 0.48f, 0.33f}, {0.25f, 0.18f, 0.12f},
};

static const Rgb helmets[] = {
  {0.92f, 0.92f, 0.92f}, {0.90f, 0.20f, 0.10f}, {0.10f, 0.10f, 0.10f},
  {0.15f, 0.45f, 0.85f}, {0.95f, 0.85f, 0.10f},
};

static const Rgb bike_frames[] = {
  {0.80f, 0.10f, 0.10f}, {0.10f, 0.35f, 0.75f}, {0.90f, 0.90f, 0.90f},
  {0.15f, 0.15f, 0.15f}, {0.20f, 0.60f, 0.30f}, {0.95f, 0.55f, 0.10f},
};

static const Rgb glass = { 0.10f, 0.12f, 0.16f };
static const Rgb window_glass = { 0.14f, 0.17f, 0.22f };
static const Rgb tyre = { 0.04f, 0.04f, 0.045f };
static const Rgb headlight = { 0.96f, 0.94f, 0.80f };
static const Rgb tail_light = { 0.75f, 0.05f, 0.05f };
static const Rgb hair = { 0.12f, 0.08f, 0.05f };
static const Rgb shoes = { 0.08f, 0.07f, 0.07f };
static const Rgb roof = { 0.32f, 0.31f, 0.30f };
static const Rgb asphalt = { 0.28f, 0.28f, 0.30f };
static const Rgb marking = { 0.84f, 0.84f, 0.80f };
static const Rgb concrete = { 0.62f, 0.60f, 0.56f };
static const Rgb horizon = { 0.78f, 0.84f, 0.90f };
static const Rgb zenith = { 0.32f, 0.52f, 0.85f };

struct _P3dCameraRender
{
  P3dCamera camera;
  P3dCameraRenderParams params;
  guint width;
  guint height;
  gsize n_pixels;

  /* the camera's centre, and each pixel's ray (street frame, 1 along the
   * optical axis) */
  gfloat origin[3];
  gfloat *ray_x, *ray_y, *ray_z;
  /* towards the sun, unit length */
  gfloat sun[3];
  /* noise: levels per unit of triangle noise, times 256 */
  gint noise_scale;

  /* the last trace: per pixel the distance along its ray, what it hit and
   * the face it entered by (axis * 2, plus 1 for the face on the axis'
   * positive side) */
  gfloat *depth;
  gint32 *hit;
  guint8 *face;

  /* per box of the last trace: the pixels that may show it (columns c0 to
   * c1, rows r0 to r1; none when c1 < c0) and the camera in its frame */
  guint boxes_size;
  gint *bounds;
  gfloat *box_origin;
  /* and its look (a hash of the seed and the box's index) */
  guint64 *looks;
  /* and the pixels its shadow on the ground may cover (as bounds), and the
   * direction to the sun in its frame */
  gint *shadow_bounds;
  gfloat *sun_local;
  /* the boxes whose shadow may cover the row being drawn */
  guint *row_shadows;
};

P3dCameraRender *
p3d_camera_render_new (const P3dCamera * camera,
    const P3dCameraRenderParams * params)
{
  P3dCameraRender *render;
  gfloat azimuth, elevation, sin_az, cos_az, sin_el, cos_el;
  guint row, column, i;

  if (params->width == 0 || params->height == 0
      || params->width > P3D_CAMERA_RENDER_MAX_SIDE
      || params->height > P3D_CAMERA_RENDER_MAX_SIDE
      || (guint64) params->width * params->height >
      P3D_CAMERA_RENDER_MAX_PIXELS
      || !(params->noise >= 0.0 && params->noise <= P3D_CAMERA_RENDER_MAX_NOISE)
      || !(params->sun_elevation >= 0.0 && params->sun_elevation <= 90.0)
      || !isfinite (params->sun_azimuth))
    return NULL;

  render = g_new0 (P3dCameraRender, 1);
  render->camera = *camera;
  render->params = *params;
  render->width = params->width;
  render->height = params->height;
  render->n_pixels = (gsize) params->width * params->height;
  for (i = 0; i < 3; i++)
    render->origin[i] = (gfloat) camera->position[i];

  render->ray_x = g_new (gfloat, render->n_pixels);
  render->ray_y = g_new (gfloat, render->n_pixels);
  render->ray_z = g_new (gfloat, render->n_pixels);
  for (row = 0; row < render->height; row++)
    for (column = 0; column < render->width; column++) {
      gsize index = (gsize) row * render->width + column;
      gdouble direction[3];

      p3d_camera_ray (camera, column, row, direction);
      render->ray_x[index] = (gfloat) direction[0];
      render->ray_y[index] = (gfloat) direction[1];
      render->ray_z[index] = (gfloat) direction[2];
    }

  azimuth = (gfloat) (params->sun_azimuth * (G_PI / 180.0));
  elevation = (gfloat) (params->sun_elevation * (G_PI / 180.0));
  p3dc_sincos (azimuth, &sin_az, &cos_az);
  p3dc_sincos (elevation, &sin_el, &cos_el);
  render->sun[0] = cos_el * cos_az;
  render->sun[1] = cos_el * sin_az;
  render->sun[2] = sin_el;
  render->noise_scale = (gint) floor (params->noise * 256.0 / TRIANGLE_SIGMA
      + 0.5);

  render->depth = g_new (gfloat, render->n_pixels);
  render->hit = g_new (gint32, render->n_pixels);
  render->face = g_new (guint8, render->n_pixels);
  for (i = 0; i < render->n_pixels; i++) {
    render->depth[i] = G_MAXFLOAT;
    render->hit[i] = HIT_NOTHING;
    render->face[i] = 0;
  }
  return render;
}

void
p3d_camera_render_free (P3dCameraRender * render)
{
  if (render == NULL)
    return;
  g_free (render->ray_x);
  g_free (render->ray_y);
  g_free (render->ray_z);
  g_free (render->depth);
  g_free (render->hit);
  g_free (render->face);
  g_free (render->bounds);
  g_free (render->box_origin);
  g_free (render->looks);
  g_free (render->shadow_bounds);
  g_free (render->sun_local);
  g_free (render->row_shadows);
  g_free (render);
}

/* The pixels @n @segments may cover: their bounds, padded and clipped to
 * the image; FALSE when there are none or they are off the image. */
static gboolean
segments_bounds (const P3dCameraRender * render,
    const P3dCameraSegment * segments, guint n, gint bounds[4])
{
  gdouble left = G_MAXDOUBLE, top = G_MAXDOUBLE;
  gdouble right = -G_MAXDOUBLE, bottom = -G_MAXDOUBLE;
  guint k;

  if (n == 0)
    return FALSE;
  for (k = 0; k < n; k++) {
    left = MIN (left, MIN (segments[k].u0, segments[k].u1));
    right = MAX (right, MAX (segments[k].u0, segments[k].u1));
    top = MIN (top, MIN (segments[k].v0, segments[k].v1));
    bottom = MAX (bottom, MAX (segments[k].v0, segments[k].v1));
  }
  /* pixel c's ray passes through u = c */
  left = MAX (floor (left) - BOUNDS_PADDING, 0.0);
  top = MAX (floor (top) - BOUNDS_PADDING, 0.0);
  right = MIN (ceil (right) + BOUNDS_PADDING, render->width - 1.0);
  bottom = MIN (ceil (bottom) + BOUNDS_PADDING, render->height - 1.0);
  if (!(left <= right && top <= bottom))
    return FALSE;
  bounds[0] = (gint) left;
  bounds[1] = (gint) top;
  bounds[2] = (gint) right;
  bounds[3] = (gint) bottom;
  return TRUE;
}

/* The pixels that may show @box: its projection's bounds, padded and
 * clipped to the image; FALSE when it is all behind the near plane or off
 * the image. */
static gboolean
box_bounds (const P3dCameraRender * render, const P3dStreetBox * box,
    gint bounds[4])
{
  P3dCameraSegment segments[P3D_CAMERA_BOX_EDGES];
  gdouble centre[3], half[3], corners[8][3];
  guint k;

  centre[0] = box->x;
  centre[1] = box->y;
  centre[2] = box->z;
  for (k = 0; k < 3; k++)
    half[k] = box->half[k];
  p3d_camera_box_corners (centre, box->cos_yaw, box->sin_yaw, half, corners);
  return segments_bounds (render, segments,
      p3d_camera_project_box (&render->camera, corners, segments), bounds);
}

/* The pixels that may show @box's shadow on the ground (at @ground_z): the
 * shadow is the convex hull of its footprint and its top face moved along
 * the sunlight to the ground; every segment between two of those eight
 * points, clipped at the near plane, bounds what the camera sees of it. */
static gboolean
shadow_bounds (const P3dCameraRender * render, const P3dStreetBox * box,
    gdouble ground_z, gint bounds[4])
{
  P3dCameraSegment segments[28];
  gdouble centre[3], half[3], corners[8][3];
  const gfloat *sun = render->sun;
  guint i, j, k, n = 0;

  centre[0] = box->x;
  centre[1] = box->y;
  centre[2] = box->z;
  for (k = 0; k < 3; k++)
    half[k] = box->half[k];
  p3d_camera_box_corners (centre, box->cos_yaw, box->sin_yaw, half, corners);
  for (k = 0; k < 8; k++) {
    gdouble fall = (corners[k][2] - ground_z) / sun[2];

    corners[k][0] -= fall * sun[0];
    corners[k][1] -= fall * sun[1];
    corners[k][2] = ground_z;
  }
  for (i = 0; i < 8; i++)
    for (j = i + 1; j < 8; j++)
      if (p3d_camera_project_segment (&render->camera, corners[i], corners[j],
              &segments[n]))
        n++;
  return segments_bounds (render, segments, n, bounds);
}

/* The look of box @index: a hash of the seed and the index, the same in
 * every camera. */
static guint64
box_look (guint64 seed, guint index, guint n_objects)
{
  guint64 key = index < n_objects ? LOOK_OBJECT + index :
      LOOK_WALL + (index - n_objects);

  return p3d_street_mix64 (p3d_street_rng_stream_state (seed,
          P3D_STREET_STREAM_CAMERA_LOOK, key));
}

void
p3d_camera_render_trace (P3dCameraRender * render, const P3dStreet * street)
{
  const P3dStreetParams *params = p3d_street_get_params (street);
  const gfloat near = (gfloat) P3D_CAMERA_NEAR;
  const gfloat *origin = render->origin;
  gfloat rise = (gfloat) - params->sensor_height - origin[2];
  gboolean ground = params->ground && rise < 0.0f;
  const P3dStreetBox *boxes;
  guint n_boxes, i, row;

  boxes = p3d_street_get_boxes (street, &n_boxes);
  if (render->boxes_size < n_boxes) {
    g_free (render->bounds);
    g_free (render->box_origin);
    g_free (render->looks);
    g_free (render->shadow_bounds);
    g_free (render->sun_local);
    g_free (render->row_shadows);
    render->boxes_size = n_boxes;
    render->bounds = g_new (gint, 4 * (gsize) n_boxes);
    render->box_origin = g_new (gfloat, 3 * (gsize) n_boxes);
    render->looks = g_new (guint64, n_boxes);
    render->shadow_bounds = g_new (gint, 4 * (gsize) n_boxes);
    render->sun_local = g_new (gfloat, 3 * (gsize) n_boxes);
    render->row_shadows = g_new (guint, n_boxes);
  }
  for (i = 0; i < n_boxes; i++) {
    const P3dStreetBox *box = &boxes[i];
    gint *bounds = &render->bounds[4 * i];
    gfloat *local = &render->box_origin[3 * i];
    gfloat dx = origin[0] - box->x, dy = origin[1] - box->y;

    if (!box_bounds (render, box, bounds)) {
      bounds[0] = 0;
      bounds[2] = -1;
      bounds[1] = bounds[3] = -1;
    }
    local[0] = box->cos_yaw * dx + box->sin_yaw * dy;
    local[1] = box->cos_yaw * dy - box->sin_yaw * dx;
    local[2] = origin[2] - box->z;
    render->looks[i] = box_look (params->seed, i,
        p3d_street_get_n_objects (street));
  }

  for (row = 0; row < render->height; row++) {
    gsize first = (gsize) row * render->width;
    gfloat *depth = render->depth + first;
    gint32 *hit = render->hit + first;
    guint8 *face = render->face + first;
    const gfloat *ray_x = render->ray_x + first;
    const gfloat *ray_y = render->ray_y + first;
    const gfloat *ray_z = render->ray_z + first;
    guint column;

    for (column = 0; column < render->width; column++) {
      depth[column] = G_MAXFLOAT;
      hit[column] = HIT_NOTHING;
      face[column] = 0;
      if (ground && ray_z[column] < 0.0f) {
        gfloat t = rise / ray_z[column];

        if (t >= near && t < FAR_LIMIT) {
          depth[column] = t;
          hit[column] = HIT_GROUND;
          face[column] = 5;
        }
      }
    }

    /* boxes in index order: of two hits at one distance the first box's
     * stays */
    for (i = 0; i < n_boxes; i++) {
      const gint *bounds = &render->bounds[4 * i];
      const P3dStreetBox *box = &boxes[i];
      const gfloat *local_origin = &render->box_origin[3 * i];
      gint c;

      if ((gint) row < bounds[1] || (gint) row > bounds[3])
        continue;
      for (c = bounds[0]; c <= bounds[2]; c++) {
        gfloat dir[3], local[3], t;
        gint axis;

        dir[0] = ray_x[c];
        dir[1] = ray_y[c];
        dir[2] = ray_z[c];
        p3d_street_box_local_direction (box, dir, local);
        if (p3d_street_ray_box (box, local_origin, local, &t, &axis)
            && t >= near && t < depth[c]) {
          depth[c] = t;
          hit[c] = (gint32) i;
          face[c] = (guint8) (axis * 2 + (local[axis] < 0.0f ? 1 : 0));
        }
      }
    }
  }
}

/* floor (@value), exactly, without a libm call (a call per use costs as
 * much as the rest of a pixel): truncation, one less below zero. For
 * |@value| < 2^62. */
static inline gfloat
floor_exact (gfloat value)
{
  gfloat truncated = (gfloat) (gint64) value;

  return truncated > value ? truncated - 1.0f : truncated;
}

/* A number in [0, 1) from @key: 24 bits of its hash. */
static inline gfloat
unit_hash (guint64 key)
{
  return (gfloat) (p3d_street_mix64 (key) >> 40) * (1.0f / 16777216.0f);
}

/* The hash of the integer cell (@cx, @cy) under @base. */
static inline gfloat
cell_hash (guint64 base, gfloat cx, gfloat cy)
{
  return unit_hash (base + (guint64) (gint64) cx * P3D_STREET_RNG_GAMMA +
      (guint64) (gint64) cy * G_GUINT64_CONSTANT (0xC2B2AE3D27D4EB4F));
}

static inline Rgb
scale_rgb (Rgb c, gfloat s)
{
  Rgb out = { c.r * s, c.g * s, c.b * s };

  return out;
}

/* The ground's colour at (@x, @y): asphalt with grain and patches, lane
 * markings, concrete sidewalks with joints every 1.5 m. */
static Rgb
ground_albedo (guint64 look, gfloat x, gfloat y)
{
  P3dStreetGround kind = p3d_street_ground_at (x, y);
  gfloat grain = 0.5f, patch = 0.5f;

  if (fabsf (x) < TEXTURE_LIMIT && fabsf (y) < TEXTURE_LIMIT) {
    grain = cell_hash (look, floor_exact (x * 20.0f), floor_exact (y * 20.0f));
    patch = cell_hash (look + 1, floor_exact (x), floor_exact (y));
  }
  if (kind == P3D_STREET_GROUND_MARKING)
    return scale_rgb (marking, 0.95f + 0.1f * grain);
  if (kind == P3D_STREET_GROUND_SIDEWALK) {
    gfloat jx = x / 1.5f, jy = y / 1.5f;
    gfloat shade = 0.93f + 0.14f * grain;

    if (fabsf (x) < TEXTURE_LIMIT && fabsf (y) < TEXTURE_LIMIT
        && (jx - floor_exact (jx) < 0.03f || jy - floor_exact (jy) < 0.03f))
      shade *= 0.72f;
    return scale_rgb (concrete, shade);
  }
  return scale_rgb (asphalt, (0.9f + 0.2f * grain) * (0.92f + 0.16f * patch));
}

/* A facade's colour at @hit (its frame) entered by face @face: windows on
 * every floor (3.2 m), a dark roof. */
static Rgb
wall_albedo (guint64 look, const P3dStreetBox * box, const gfloat hit[3],
    guint face)
{
  gfloat height, along, level, in_level, position;
  Rgb base = facades[look % G_N_ELEMENTS (facades)];

  if (face / 2 == 2)
    return roof;
  height = hit[2] + box->half[2];
  along = face / 2 == 1 ? hit[0] + box->half[0] : hit[1] + box->half[1];
  level = floor_exact (height / 3.2f);
  in_level = height - level * 3.2f;
  position = along / 3.0f - floor_exact (along / 3.0f);
  if (in_level >= 0.9f && in_level < 2.4f && position >= 0.25f
      && position < 0.75f)
    return window_glass;
  return scale_rgb (base, 0.9f + 0.2f * unit_hash (look + 7));
}

/* An object's colour at @hit (its frame) entered by face @face. @u: its
 * height above the object's bottom as a fraction of its height; @along
 * and @across: the hit along and across it, -1 to 1. */
static Rgb
object_albedo (guint64 look, const P3dStreetObject * object,
    const P3dStreetBox * box, const gfloat hit[3], guint face)
{
  gfloat u = (hit[2] + box->half[2]) / (2.0f * box->half[2]);
  gfloat along = hit[0] / box->half[0], across = hit[1] / box->half[1];
  guint axis = face / 2;
  gboolean positive = face % 2 == 1;

  switch (object->label) {
    case P3D_STREET_LABEL_CAR:{
      Rgb paint = scale_rgb (car_paints[look % G_N_ELEMENTS (car_paints)],
          0.8f + 0.4f * (gfloat) object->reflectivity);

      if (axis == 2)
        return paint;
      if (u > 0.62f)
        return glass;
      if (u < 0.25f) {
        if (axis == 1 && fabsf (along) >= 0.45f && fabsf (along) < 0.8f)
          return tyre;
        return scale_rgb (paint, 0.55f);
      }
      if (axis == 0 && u >= 0.4f && u < 0.52f && fabsf (across) > 0.55f)
        return positive ? headlight : tail_light;
      return paint;
    }
    case P3D_STREET_LABEL_PEDESTRIAN:{
      if (u > 0.87f)
        return axis == 2 || (axis == 0 && !positive) ? hair :
            skins[look % G_N_ELEMENTS (skins)];
      if (u > 0.47f)
        return clothes[(look >> 8) % G_N_ELEMENTS (clothes)];
      if (u > 0.05f)
        return trousers[(look >> 16) % G_N_ELEMENTS (trousers)];
      return shoes;
    }
    default:{
      if (u > 0.88f)
        return helmets[look % G_N_ELEMENTS (helmets)];
      if (u > 0.45f)
        return clothes[(look >> 8) % G_N_ELEMENTS (clothes)];
      if (u > 0.2f && axis == 1 && fabsf (along) < 0.35f)
        return bike_frames[(look >> 16) % G_N_ELEMENTS (bike_frames)];
      return tyre;
    }
  }
}

static Rgb
sky_color (gfloat x, gfloat y, gfloat z)
{
  gfloat length = sqrtf (x * x + y * y + z * z);
  gfloat up = z / length;
  gfloat s = up <= 0.0f ? 0.0f : MIN (up * 1.5f, 1.0f);
  Rgb c;

  c.r = horizon.r + (zenith.r - horizon.r) * s;
  c.g = horizon.g + (zenith.g - horizon.g) * s;
  c.b = horizon.b + (zenith.b - horizon.b) * s;
  return c;
}

/* @value in levels of 255, rounded to the nearest, clamped. */
static inline gint
to_level (gfloat value)
{
  gfloat level = value * 255.0f + 0.5f;

  if (!(level >= 0.0f))
    return 0;
  /* truncation is floor for what is left */
  return level >= 255.0f ? 255 : (gint) level;
}

void
p3d_camera_render_rgb (P3dCameraRender * render, const P3dStreet * street,
    guint64 noise_frame, guint8 * pixels, gsize stride)
{
  const P3dStreetParams *params = p3d_street_get_params (street);
  const gfloat *origin = render->origin, *sun = render->sun;
  guint n_boxes, n_objects = p3d_street_get_n_objects (street), row;
  const P3dStreetBox *boxes = p3d_street_get_boxes (street, &n_boxes);
  guint64 ground_look = p3d_street_rng_stream_state (params->seed,
      P3D_STREET_STREAM_CAMERA_LOOK, LOOK_GROUND);
  guint64 noise_base = p3d_street_mix64 (p3d_street_rng_stream_state
      (params->seed, P3D_STREET_STREAM_CAMERA_NOISE, noise_frame) ^
      ((guint64) render->params.camera_index * P3D_STREET_RNG_GAMMA));
  gint noise_scale = render->noise_scale;
  gboolean shadows = render->params.sun_elevation >= SHADOW_MIN_ELEVATION;
  guint i;

  for (i = 0; shadows && i < n_boxes; i++) {
    gint *bounds = &render->shadow_bounds[4 * i];
    gfloat *local = &render->sun_local[3 * i];

    if (!shadow_bounds (render, &boxes[i], -params->sensor_height, bounds)) {
      bounds[0] = 0;
      bounds[2] = -1;
      bounds[1] = bounds[3] = -1;
    }
    p3d_street_box_local_direction (&boxes[i], sun, local);
  }

  for (row = 0; row < render->height; row++) {
    guint8 *out = pixels + row * stride;
    guint column, n_shadows = 0;

    for (i = 0; shadows && i < n_boxes; i++)
      if ((gint) row >= render->shadow_bounds[4 * i + 1]
          && (gint) row <= render->shadow_bounds[4 * i + 3])
        render->row_shadows[n_shadows++] = i;

    for (column = 0; column < render->width; column++, out += 3) {
      gsize index = (gsize) row * render->width + column;
      gfloat dx = render->ray_x[index], dy = render->ray_y[index];
      gfloat dz = render->ray_z[index], t = render->depth[index];
      gint32 hit = render->hit[index];
      Rgb c;

      if (hit == HIT_NOTHING) {
        c = sky_color (dx, dy, dz);
      } else {
        gfloat lambert, light, haze;
        Rgb albedo;

        if (hit == HIT_GROUND) {
          gfloat point[3];

          point[0] = origin[0] + t * dx;
          point[1] = origin[1] + t * dy;
          point[2] = origin[2] + t * dz;
          albedo = ground_albedo (ground_look, point[0], point[1]);
          lambert = sun[2];
          /* in the shadow of a box, the sun's part is gone */
          for (i = 0; i < n_shadows; i++) {
            guint box_index = render->row_shadows[i];
            const P3dStreetBox *box = &boxes[box_index];
            const gint *bounds = &render->shadow_bounds[4 * box_index];
            gfloat local_point[3], ignored_t;
            gint ignored_axis;

            if ((gint) column < bounds[0] || (gint) column > bounds[2])
              continue;
            local_point[0] = box->cos_yaw * (point[0] - box->x) +
                box->sin_yaw * (point[1] - box->y);
            local_point[1] = box->cos_yaw * (point[1] - box->y) -
                box->sin_yaw * (point[0] - box->x);
            local_point[2] = point[2] - box->z;
            if (p3d_street_ray_box (box, local_point,
                    &render->sun_local[3 * box_index], &ignored_t,
                    &ignored_axis)) {
              lambert = 0.0f;
              break;
            }
          }
        } else {
          const P3dStreetBox *box = &boxes[hit];
          const gfloat *local_origin = &render->box_origin[3 * hit];
          guint face = render->face[index], axis = face / 2;
          gfloat dir[3], local[3], point[3], sign;
          guint64 look = render->looks[hit];

          dir[0] = dx;
          dir[1] = dy;
          dir[2] = dz;
          p3d_street_box_local_direction (box, dir, local);
          point[0] = local_origin[0] + t * local[0];
          point[1] = local_origin[1] + t * local[1];
          point[2] = local_origin[2] + t * local[2];
          if ((guint) hit < n_objects)
            albedo = object_albedo (look, p3d_street_get_object (street,
                    (guint) hit), box, point, face);
          else
            albedo = wall_albedo (look, box, point, face);
          /* the face's outward normal in the street's frame, dotted with
           * the sun's direction */
          sign = face % 2 == 1 ? 1.0f : -1.0f;
          if (axis == 0)
            lambert = sign * (box->cos_yaw * sun[0] + box->sin_yaw * sun[1]);
          else if (axis == 1)
            lambert = sign * (box->cos_yaw * sun[1] - box->sin_yaw * sun[0]);
          else
            lambert = sign * sun[2];
        }
        light = AMBIENT + DIFFUSE * MAX (lambert, 0.0f);
        haze = t / (t + HAZE_DISTANCE);
        c.r = albedo.r * light;
        c.g = albedo.g * light;
        c.b = albedo.b * light;
        c.r = c.r + (horizon.r - c.r) * haze;
        c.g = c.g + (horizon.g - c.g) * haze;
        c.b = c.b + (horizon.b - c.b) * haze;
      }

      if (noise_scale == 0) {
        out[0] = (guint8) to_level (c.r);
        out[1] = (guint8) to_level (c.g);
        out[2] = (guint8) to_level (c.b);
      } else {
        guint64 word = p3d_street_mix64 (noise_base +
            P3D_STREET_RNG_GAMMA * (guint64) (index + 1));
        gint levels[3], k;

        levels[0] = to_level (c.r);
        levels[1] = to_level (c.g);
        levels[2] = to_level (c.b);
        for (k = 0; k < 3; k++) {
          /* two bytes make a triangle in [-255, 255]; integer division
           * truncates towards zero everywhere */
          gint triangle = (gint) ((word >> (16 * k)) & 0xff) +
              (gint) ((word >> (16 * k + 8)) & 0xff) - 255;
          gint level = levels[k] + triangle * noise_scale / 256;

          out[k] = (guint8) CLAMP (level, 0, 255);
        }
      }
    }
  }
}

void
p3d_camera_render_depth (P3dCameraRender * render, guint8 * pixels,
    gsize stride)
{
  guint row, column;

  for (row = 0; row < render->height; row++) {
    guint8 *out = pixels + row * stride;

    for (column = 0; column < render->width; column++, out += 2) {
      gsize index = (gsize) row * render->width + column;
      guint value = P3D_CAMERA_RENDER_NO_DEPTH;

      if (render->hit[index] != HIT_NOTHING) {
        /* rounded to the nearest: truncation is floor for a positive
         * number */
        gfloat millimetres = render->depth[index] * 1000.0f + 0.5f;

        value = millimetres >= (gfloat) P3D_CAMERA_RENDER_MAX_DEPTH ?
            P3D_CAMERA_RENDER_MAX_DEPTH : (guint) millimetres;
      }
      out[0] = (guint8) value;
      out[1] = (guint8) (value >> 8);
    }
  }
}

void
p3d_camera_render_labels (P3dCameraRender * render, const P3dStreet * street,
    guint8 * pixels, gsize stride)
{
  guint n_objects = p3d_street_get_n_objects (street), row, column;

  for (row = 0; row < render->height; row++) {
    guint8 *out = pixels + row * stride;

    for (column = 0; column < render->width; column++) {
      gsize index = (gsize) row * render->width + column;
      gint32 hit = render->hit[index];
      P3dCameraClass value;

      if (hit == HIT_NOTHING) {
        value = P3D_CAMERA_CLASS_SKY;
      } else if (hit == HIT_GROUND) {
        gfloat t = render->depth[index];

        switch (p3d_street_ground_at (render->origin[0] +
                t * render->ray_x[index],
                render->origin[1] + t * render->ray_y[index])) {
          case P3D_STREET_GROUND_MARKING:
            value = P3D_CAMERA_CLASS_MARKING;
            break;
          case P3D_STREET_GROUND_SIDEWALK:
            value = P3D_CAMERA_CLASS_SIDEWALK;
            break;
          default:
            value = P3D_CAMERA_CLASS_ROAD;
            break;
        }
      } else if ((guint) hit < n_objects) {
        value = (P3dCameraClass) p3d_street_get_object (street,
            (guint) hit)->label;
      } else {
        value = P3D_CAMERA_CLASS_BUILDING;
      }
      out[column] = (guint8) value;
    }
  }
}

gfloat
p3d_camera_render_get_depth (const P3dCameraRender * render, guint column,
    guint row)
{
  gsize index;

  g_return_val_if_fail (column < render->width && row < render->height,
      INFINITY);
  index = (gsize) row *render->width + column;
  return render->hit[index] == HIT_NOTHING ? INFINITY : render->depth[index];
}
