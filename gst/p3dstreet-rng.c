/* The random numbers of the synthetic street; see p3dstreet-rng.h. */
#include "p3dstreet-rng.h"

guint64
p3d_street_rng_stream_state (guint64 seed, guint stream, guint64 frame)
{
  return p3d_street_mix64 (p3d_street_mix64 (seed +
          P3D_STREET_RNG_GAMMA * stream)
      + frame);
}

void
p3d_street_rng_init (P3dStreetRng * rng, guint64 seed, guint stream,
    guint64 frame)
{
  rng->state = p3d_street_rng_stream_state (seed, stream, frame);
}

/* From 53 random bits: every step exact but the last multiply-add, which
 * is correctly rounded. */
gdouble
p3d_street_rng_uniform (P3dStreetRng * rng, gdouble lo, gdouble hi)
{
  gdouble unit = (gdouble) (p3d_street_rng_next (rng) >> 11) *
      (1.0 / 9007199254740992.0);

  return lo + (hi - lo) * unit;
}

guint
p3d_street_rng_below (P3dStreetRng * rng, guint bound)
{
  return (guint) (((p3d_street_rng_next (rng) >> 32) * bound) >> 32);
}

/* The Irwin-Hall sum of twelve uniform 16-bit integers, centred and scaled
 * by 2^-16. Integer sums and a power of two scale are exact, so every
 * machine gets the same value; no libm log or cos. */
gfloat
p3d_street_gauss_from_words (const guint64 words[3])
{
  gint32 sum = 0;
  guint i, j;

  for (i = 0; i < 3; i++)
    for (j = 0; j < 4; j++)
      sum += (gint32) ((words[i] >> (16 * j)) & 0xffff);
  return (gfloat) (sum - 6 * 65535) * (1.0f / 65536.0f);
}

gfloat
p3d_street_rng_gauss (P3dStreetRng * rng)
{
  guint64 words[3];

  words[0] = p3d_street_rng_next (rng);
  words[1] = p3d_street_rng_next (rng);
  words[2] = p3d_street_rng_next (rng);
  return p3d_street_gauss_from_words (words);
}
