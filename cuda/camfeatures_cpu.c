/* camfeatures: the reference pack; see camfeatures.h. */
#include "camfeatures.h"
#include "half.h"

P3dcResult
p3dc_camfeatures_pack_cpu (const P3dcCamFeaturesPack * pack,
    const P3dcMapView * view, void *out)
{
  uint32_t n, c, y, x;

  if (pack == NULL || view == NULL || view->data == NULL || out == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (n = 0; n < pack->batch; n++)
    for (c = 0; c < pack->channels; c++)
      for (y = 0; y < pack->height; y++)
        for (x = 0; x < pack->width; x++) {
          size_t from = n * view->batch_stride + c * view->channel_stride +
              y * view->row_stride + x * view->column_stride;
          size_t to = pack->channels_last ?
              (((size_t) n * pack->height + y) * pack->width + x) *
              pack->channels + c :
              (((size_t) n * pack->channels + c) * pack->height + y) *
              pack->width + x;

          if (view->half && pack->half_out)
            ((uint16_t *) out)[to] = ((const uint16_t *) view->data)[from];
          else if (view->half)
            ((float *) out)[to] =
                p3dc_half_to_float (((const uint16_t *) view->data)[from]);
          else if (pack->half_out)
            ((uint16_t *) out)[to] =
                p3dc_float_to_half (((const float *) view->data)[from]);
          else
            ((float *) out)[to] = ((const float *) view->data)[from];
        }
  return P3DC_OK;
}
