/* What one camera of cameratestsrc sees of the synthetic street
 * (p3dstreet.h): its colour image, its per-pixel depth and its per-pixel
 * class.
 *
 * GLib only, no GStreamer, so that the rendering is unit-tested on its own.
 *
 * Every pixel's ray (p3dcamera.h: the ray through the pixel's centre) is
 * cast against the ground plane and the street's boxes (objects and
 * walls), in the street's current frame; its nearest hit at least
 * P3D_CAMERA_NEAR in front of the camera is what the pixel shows, nothing
 * (the sky) when there is none. Only the boxes whose projection (their
 * edges clipped at the near plane, p3d_camera_project_box(), padded by
 * two pixels) covers a pixel are tested for it: a box never covers more.
 *
 * The colour image: per-class and per-object colours (car paint, glass,
 * tyres, head and tail lights on the right faces; pedestrians' and
 * cyclists' skin, clothes and helmets; facades with windows), all picked
 * from the seed and the object's index so that every camera of a rig sees
 * an object alike; ground texture (asphalt grain, lane markings, sidewalk
 * joints); light from a sun direction (Lambert's law over an ambient
 * part); haze towards the horizon; a sky brighter at the horizon; and the
 * sensor's noise, drawn per pixel from the seed, the frame and the
 * camera's index.
 *
 * Determinism: the same street, camera and parameters give the same bytes
 * on every machine. The rays are computed once in float64 with +, -, *
 * and / only, then kept in float32; the casting and the shading use float32
 * +, -, *, /, sqrtf, floorf and comparisons (correctly rounded or exact
 * everywhere, with -ffp-contract=off), sines and cosines from
 * p3dc_sincos(); the random numbers are SplitMix64 integers and the noise
 * is integer arithmetic.
 */
#ifndef __P3D_CAMERA_RENDER_H__
#define __P3D_CAMERA_RENDER_H__

#include <glib.h>

#include "p3dcamera.h"
#include "p3dstreet.h"

G_BEGIN_DECLS

/* What a pixel shows, as emit=labels writes it: the street's object labels
 * first (pointcloudtestsrc's boxes have the same ones), then the rest. */
typedef enum
{
  P3D_CAMERA_CLASS_CAR = P3D_STREET_LABEL_CAR,
  P3D_CAMERA_CLASS_PEDESTRIAN = P3D_STREET_LABEL_PEDESTRIAN,
  P3D_CAMERA_CLASS_CYCLIST = P3D_STREET_LABEL_CYCLIST,
  P3D_CAMERA_CLASS_ROAD = 3,
  P3D_CAMERA_CLASS_MARKING = 4,
  P3D_CAMERA_CLASS_SIDEWALK = 5,
  P3D_CAMERA_CLASS_BUILDING = 6,
  P3D_CAMERA_CLASS_SKY = 7,
} P3dCameraClass;

/* Largest image side rendered, and the most pixels of an image (4096 x
 * 4096: a renderer keeps 21 bytes of rays and hits per pixel). */
#define P3D_CAMERA_RENDER_MAX_SIDE 16384
#define P3D_CAMERA_RENDER_MAX_PIXELS (4096 * 4096)
/* Depth (millimetres) written where nothing was hit. */
#define P3D_CAMERA_RENDER_NO_DEPTH 0
/* The largest depth written, millimetres: farther hits are written as
 * this. */
#define P3D_CAMERA_RENDER_MAX_DEPTH 65535

/* The largest sensor noise, in levels of 255. */
#define P3D_CAMERA_RENDER_MAX_NOISE 64.0

/**
 * P3dCameraRenderParams:
 * @width: image width in pixels
 * @height: image height in pixels
 * @camera_index: the camera's index in its calibration file; the cameras
 *     of a rig get independent noise
 * @sun_azimuth: the direction the sunlight comes from, degrees from +x
 *     (forward) towards +y (left), in the street's frame
 * @sun_elevation: degrees above the horizon, 0 to 90
 * @noise: standard deviation of the sensor noise, in levels of 255 (0:
 *     none)
 */
typedef struct
{
  guint width;
  guint height;
  guint camera_index;
  gdouble sun_azimuth;
  gdouble sun_elevation;
  gdouble noise;
} P3dCameraRenderParams;

typedef struct _P3dCameraRender P3dCameraRender;

/* A renderer of @camera's view (copied) with @params, NULL when a size is
 * 0 or beyond P3D_CAMERA_RENDER_MAX_SIDE, the image has more than
 * P3D_CAMERA_RENDER_MAX_PIXELS, or the noise or the sun's elevation is out
 * of range. */
P3dCameraRender *p3d_camera_render_new (const P3dCamera * camera,
    const P3dCameraRenderParams * params);
void p3d_camera_render_free (P3dCameraRender * render);

/* Casts every pixel's ray through @street's current frame; the functions
 * below write what it found. */
void p3d_camera_render_trace (P3dCameraRender * render,
    const P3dStreet * street);

/* The colour image of the last trace of @street, 3 bytes a pixel (R, G,
 * B), rows @stride bytes apart, with the noise of frame @noise_frame. */
void p3d_camera_render_rgb (P3dCameraRender * render,
    const P3dStreet * street, guint64 noise_frame, guint8 * pixels,
    gsize stride);

/* The depth of the last trace, unsigned 16-bit little-endian millimetres
 * along the optical axis (the camera frame's z), rounded to the nearest,
 * P3D_CAMERA_RENDER_MAX_DEPTH beyond 65.535 m and
 * P3D_CAMERA_RENDER_NO_DEPTH where nothing was hit; rows @stride bytes
 * apart. */
void p3d_camera_render_depth (P3dCameraRender * render, guint8 * pixels,
    gsize stride);

/* The P3dCameraClass of every pixel of the last trace of @street, a byte
 * each, rows @stride bytes apart. */
void p3d_camera_render_labels (P3dCameraRender * render,
    const P3dStreet * street, guint8 * pixels, gsize stride);

/* The depth of the last trace at pixel (@column, @row), metres; +inf
 * where nothing was hit. */
gfloat p3d_camera_render_get_depth (const P3dCameraRender * render,
    guint column, guint row);

G_END_DECLS

#endif /* __P3D_CAMERA_RENDER_H__ */
