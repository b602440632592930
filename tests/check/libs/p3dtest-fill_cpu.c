/* Reference for p3dtest-fill.cu. */
#include "p3dtest-fill.h"

void
p3d_fill_pattern_cpu (uint32_t * dst, size_t count, uint32_t seed)
{
  size_t i;

  for (i = 0; i < count; i++)
    dst[i] = p3d_fill_pattern_value (seed, i);
}
