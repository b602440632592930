/* The random numbers of the synthetic street (p3dstreet.h): SplitMix64
 * streams, and a Gaussian made of integer sums, so that the same seed gives
 * the same bytes on every machine.
 *
 * Shared by the street and the sensors that see it (pointcloudtestsrc's
 * lidar, cameratestsrc's cameras); GLib only. */
#ifndef __P3D_STREET_RNG_H__
#define __P3D_STREET_RNG_H__

#include <glib.h>

G_BEGIN_DECLS

/* SplitMix64's increment. */
#define P3D_STREET_RNG_GAMMA G_GUINT64_CONSTANT (0x9E3779B97F4A7C15)

/* SplitMix64. */
typedef struct
{
  guint64 state;
} P3dStreetRng;

/* SplitMix64's output function. Inline: the ray caster draws its noise
 * through it for every ray. */
static inline guint64
p3d_street_mix64 (guint64 z)
{
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static inline guint64
p3d_street_rng_next (P3dStreetRng * rng)
{
  rng->state += P3D_STREET_RNG_GAMMA;
  return p3d_street_mix64 (rng->state);
}

/* The start of stream @stream of @seed for frame @frame: independent
 * streams, so that changing one part of the scene (say, the number of cars)
 * leaves the others where they were. */
guint64 p3d_street_rng_stream_state (guint64 seed, guint stream,
    guint64 frame);
void p3d_street_rng_init (P3dStreetRng * rng, guint64 seed, guint stream,
    guint64 frame);

/* Uniform in [lo, hi). */
gdouble p3d_street_rng_uniform (P3dStreetRng * rng, gdouble lo, gdouble hi);
/* Uniform in [0, bound). */
guint p3d_street_rng_below (P3dStreetRng * rng, guint bound);

/* Standard normal, approximately, from three random words; bounded by +-6. */
gfloat p3d_street_gauss_from_words (const guint64 words[3]);
/* The same from the next three words of @rng. */
gfloat p3d_street_rng_gauss (P3dStreetRng * rng);

G_END_DECLS

#endif /* __P3D_STREET_RNG_H__ */
