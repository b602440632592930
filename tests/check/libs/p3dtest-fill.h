/* A pattern fill, a kernel of the tests' own (libp3dtestcuda, not part of
 * the compute library): the memory tests use it to prove that a device
 * buffer written by a kernel maps back to the host with the right bytes, and
 * in the right order between streams.  Its runtime is a copy of its own,
 * linked statically into the test; the streams and device memory it is
 * given come from the compute library's, and work across the two because
 * both use the device's primary context. */
#ifndef P3D_FILL_H
#define P3D_FILL_H

#include <stddef.h>
#include <stdint.h>

#include "hostdevice.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The pattern's value at @index for @seed: a multiplicative hash, so that a
 * wrong offset, a stale buffer or a partial copy shows in every word. */
static P3DC_HOST_DEVICE uint32_t
p3d_fill_pattern_value (uint32_t seed, size_t index)
{
  uint32_t x = (uint32_t) index * 2654435761u ^ seed * 40503u;

  return x ^ (x >> 15);
}

/* dst[i] = p3d_fill_pattern_value (seed, i) for i < count. */
void p3d_fill_pattern_cpu (uint32_t * dst, size_t count, uint32_t seed);
P3dcResult p3d_fill_pattern_cuda (uint32_t * dst, size_t count, uint32_t seed,
    P3dcCudaStream stream);

/* A kernel that keeps @stream busy until the host releases it, so that a
 * test can show that something did not wait for that stream whatever the
 * speed of the machine (a long fill can finish before the host looks).  It
 * computes nothing, so it has no reference.  The kernel gives up by itself
 * after 10 s, so a test whose host side wrongly waits for it fails instead
 * of hanging. */
typedef struct P3dFillHold P3dFillHold;

P3dcResult p3d_fill_hold_cuda (P3dcCudaStream stream, P3dFillHold ** hold);
/* Lets the kernel finish; returns at once. */
void p3d_fill_hold_release (P3dFillHold * hold);
/* Releases the kernel if not done yet, waits for it and frees @hold. */
P3dcResult p3d_fill_hold_free (P3dFillHold * hold);

#ifdef __cplusplus
}
#endif

#endif /* P3D_FILL_H */
