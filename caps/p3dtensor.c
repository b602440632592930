/* Tensors in buffers: layout checks, per-tensor mapping, caps features. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dcudamemory.h"
#include "p3dtensor.h"
#include "runtime.h"

gsize
p3d_tensor_layout_get_total_size (const P3dTensorLayout * layout)
{
  gsize total = 0;
  guint i;

  for (i = 0; i < layout->n_tensors; i++)
    total += layout->size[i];
  return total;
}

gboolean
p3d_tensor_layout_is_equal (const P3dTensorLayout * a,
    const P3dTensorLayout * b)
{
  guint i;

  if (a->n_tensors != b->n_tensors)
    return FALSE;
  for (i = 0; i < a->n_tensors; i++)
    if (a->size[i] != b->size[i] || a->record[i] != b->record[i])
      return FALSE;
  return TRUE;
}

static gboolean
layout_is_fixed (const P3dTensorLayout * layout)
{
  guint i;

  for (i = 0; i < layout->n_tensors; i++)
    if (layout->record[i] != 0)
      return FALSE;
  return TRUE;
}

/* Whether tensor @i may be @size bytes long; @why says why not. */
static gboolean
tensor_size_fits (const P3dTensorLayout * layout, guint i, gsize size,
    gchar ** why)
{
  gsize record = layout->record[i], capacity = layout->size[i];

  if (record == 0) {
    if (size == capacity)
      return TRUE;
    if (why)
      *why = g_strdup_printf ("tensor %u is %" G_GSIZE_FORMAT " bytes, the "
          "caps require %" G_GSIZE_FORMAT, i, size, capacity);
    return FALSE;
  }
  if (size % record != 0) {
    if (why)
      *why = g_strdup_printf ("tensor %u is %" G_GSIZE_FORMAT " bytes, not a "
          "whole number of %" G_GSIZE_FORMAT "-byte records (%" G_GSIZE_FORMAT
          " bytes left over)", i, size, record, size % record);
    return FALSE;
  }
  if (capacity != 0 && size > capacity) {
    if (why)
      *why = g_strdup_printf ("tensor %u is %" G_GSIZE_FORMAT " bytes, more "
          "than its capacity of %" G_GSIZE_FORMAT, i, size, capacity);
    return FALSE;
  }
  return TRUE;
}

gboolean
p3d_tensor_layout_check_buffer (const P3dTensorLayout * layout,
    GstBuffer * buffer, gchar ** why)
{
  guint i, n = gst_buffer_n_memory (buffer);
  gsize total;

  if (why)
    *why = NULL;
  if (n == layout->n_tensors) {
    for (i = 0; i < n; i++)
      if (!tensor_size_fits (layout, i,
              gst_memory_get_sizes (gst_buffer_peek_memory (buffer, i), NULL,
                  NULL), why))
        goto whole;
    return TRUE;
  }
whole:
  /* A record read back from a file: any split of exactly the total size. */
  total = gst_buffer_get_size (buffer);
  if (layout_is_fixed (layout)
      && total == p3d_tensor_layout_get_total_size (layout)) {
    if (why)
      g_clear_pointer (why, g_free);
    return TRUE;
  }
  /* One tensor: any split, an empty buffer without memory included. */
  if (layout->n_tensors == 1 && tensor_size_fits (layout, 0, total, NULL)) {
    if (why)
      g_clear_pointer (why, g_free);
    return TRUE;
  }
  if (why && *why == NULL)
    *why = g_strdup_printf ("buffer of %" G_GSIZE_FORMAT " bytes in %u "
        "memories does not hold the %u tensors of the caps (%" G_GSIZE_FORMAT
        " bytes)", total, n, layout->n_tensors,
        p3d_tensor_layout_get_total_size (layout));
  return FALSE;
}

gboolean
p3d_tensor_map (P3dTensorMap * map, GstBuffer * buffer,
    const P3dTensorLayout * layout, GstMapFlags flags, gchar ** why)
{
  guint i, n = gst_buffer_n_memory (buffer);
  gboolean per_memory = (n == layout->n_tensors);

  memset (map, 0, sizeof (*map));
  if (!p3d_tensor_layout_check_buffer (layout, buffer, why))
    return FALSE;
  if (per_memory) {
    for (i = 0; i < n && per_memory; i++)
      per_memory = tensor_size_fits (layout, i,
          gst_memory_get_sizes (gst_buffer_peek_memory (buffer, i), NULL,
              NULL), NULL);
  }
  map->buffer = buffer;
  map->n_tensors = layout->n_tensors;

  if (per_memory) {
    for (i = 0; i < n; i++) {
      GstMemory *mem = gst_buffer_peek_memory (buffer, i);

      if ((flags & P3D_MAP_CUDA) && !p3d_is_cuda_memory (mem)) {
        if (why)
          *why = g_strdup_printf ("tensor %u is not in CUDA memory", i);
        goto failed;
      }
      if (!gst_memory_map (mem, &map->info[i], flags)) {
        if (why)
          *why = g_strdup_printf ("cannot map tensor %u", i);
        goto failed;
      }
      map->data[i] = map->info[i].data;
      map->size[i] = map->info[i].size;
    }
    return TRUE;
  failed:
    while (i-- > 0)
      gst_memory_unmap (gst_buffer_peek_memory (buffer, i), &map->info[i]);
    memset (map, 0, sizeof (*map));
    return FALSE;
  } else {
    guint8 *data;
    gsize offset = 0;

    if (flags & P3D_MAP_CUDA) {
      if (why)
        *why = g_strdup ("a buffer of merged tensors cannot be read on the "
            "device as it is");
      memset (map, 0, sizeof (*map));
      return FALSE;
    }
    if (!gst_buffer_map (buffer, &map->info[0], flags)) {
      if (why)
        *why = g_strdup ("cannot map the buffer");
      memset (map, 0, sizeof (*map));
      return FALSE;
    }
    map->whole = TRUE;
    data = map->info[0].data;
    for (i = 0; i < layout->n_tensors; i++) {
      gsize size = layout->record[i] ? map->info[0].size : layout->size[i];

      map->data[i] = data + offset;
      map->size[i] = size;
      offset += size;
    }
    return TRUE;
  }
}

void
p3d_tensor_unmap (P3dTensorMap * map)
{
  guint i;

  if (map->buffer == NULL)
    return;
  if (map->whole) {
    gst_buffer_unmap (map->buffer, &map->info[0]);
  } else {
    for (i = 0; i < map->n_tensors; i++)
      gst_memory_unmap (gst_buffer_peek_memory (map->buffer, i), &map->info[i]);
  }
  memset (map, 0, sizeof (*map));
}

gboolean
p3d_tensor_buffer_is_on_device (GstBuffer * buffer,
    const P3dTensorLayout * layout, gint device_id)
{
  guint i, n = gst_buffer_n_memory (buffer);

  if (n != layout->n_tensors)
    return FALSE;
  for (i = 0; i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buffer, i);

    if (!p3d_is_cuda_memory (mem)
        || ((P3dCudaMemory *) mem)->device_id != device_id
        || !tensor_size_fits (layout, i, gst_memory_get_sizes (mem, NULL,
                NULL), NULL))
      return FALSE;
  }
  return TRUE;
}

gboolean
p3d_caps_features_is_cuda (const GstCapsFeatures * features)
{
  return features != NULL && !gst_caps_features_is_any (features)
      && gst_caps_features_contains (features, P3D_CAPS_FEATURE_MEMORY_CUDA);
}

gboolean
p3d_caps_is_cuda (const GstCaps * caps)
{
  return caps != NULL && gst_caps_get_size (caps) > 0
      && p3d_caps_features_is_cuda (gst_caps_get_features (caps, 0));
}

GstCaps *
p3d_caps_with_both_memories (GstCaps * caps, gboolean cuda_first)
{
  GstCaps *result;
  guint i, pass;

  if (gst_caps_is_any (caps))
    return gst_caps_new_any ();
  result = gst_caps_new_empty ();
  for (i = 0; i < gst_caps_get_size (caps); i++) {
    for (pass = 0; pass < 2; pass++) {
      GstStructure *s = gst_structure_copy (gst_caps_get_structure (caps, i));
      gboolean cuda = (pass == 0) == cuda_first;

      gst_caps_append_structure_full (result, s, cuda ?
          gst_caps_features_new (P3D_CAPS_FEATURE_MEMORY_CUDA, NULL) : NULL);
    }
  }
  return result;
}

GstCaps *
p3d_caps_without_features (const GstCaps * caps)
{
  GstCaps *result;
  guint i;

  if (gst_caps_is_any (caps))
    return gst_caps_new_any ();
  result = gst_caps_new_empty ();
  for (i = 0; i < gst_caps_get_size (caps); i++)
    result = gst_caps_merge_structure (result,
        gst_structure_copy (gst_caps_get_structure (caps, i)));
  return result;
}

gboolean
p3d_cuda_device_available (void)
{
  static gsize available = 0;

  /* 1 + the answer, so that 0 means "not looked for yet" */
  if (g_once_init_enter (&available))
    g_once_init_leave (&available, 1 + (p3dc_cuda_device_count () > 0));
  return available == 2;
}

GstCaps *
p3d_caps_with_usable_memories (GstCaps * caps, gboolean cuda_first)
{
  if (p3d_cuda_device_available ())
    return p3d_caps_with_both_memories (caps, cuda_first);
  return gst_caps_copy (caps);
}
