/* gst-perception: how a GstBuffer carries the tensors of a media type.
 *
 * One GstMemory per tensor, in the fixed order that docs/media-types.md gives
 * for each media type, each sized by the caps (capacity, not content); a
 * count the kernels produce is a tensor of its own (one uint32), so it lives
 * where the other tensors live and no kernel waits for the host to learn it.
 * filesink therefore writes the tensors one after another, and a file holds
 * fixed-size records that docs/media-types.md describes byte by byte.
 *
 * A buffer whose memories are split differently but whose total size is
 * exactly the layout's (a record read back with filesrc blocksize= or
 * multifilesrc) is accepted too: it is mapped whole and sliced.
 *
 * Map tensors by index with p3d_tensor_map(), never the whole buffer with
 * gst_buffer_map(): that would merge the memories into one host copy.
 */
#ifndef __P3D_TENSOR_H__
#define __P3D_TENSOR_H__

#include <gst/gst.h>

#include "p3dcudamemory.h"

G_BEGIN_DECLS

#define P3D_MAX_TENSORS 4

/* The largest tensor, in bytes (docs/media-types.md: no tensor reaches
 * 2 GiB). Buffer pools and the size fields of GstMemory users in the wild
 * take 32-bit signed sizes, and kernels index bytes with 32-bit ints; one
 * limit for every media type keeps an element from accepting caps that a
 * neighbour cannot allocate. */
#define P3D_TENSOR_MAX_BYTES ((gsize) G_MAXINT32)

/* The largest record (all the tensors of one buffer together) of a media
 * type of several fixed tensors, in bytes: 0x7ffff000, the most one
 * write(2) moves on Linux. GStreamer 1.22's filesink, given a buffer of
 * more, never finishes the short write and grows a sparse file without
 * end; a record that fits is written whole. */
#define P3D_RECORD_MAX_BYTES ((gsize) 0x7ffff000)

/**
 * P3dTensorLayout:
 * @n_tensors: tensors in a buffer
 * @size: bytes of each tensor; for a tensor of variable length, its
 *     capacity (0: unbounded)
 * @record: for a tensor of variable length (a point cloud's points), the
 *     size of one record, the tensor holding any whole number of them up to
 *     its capacity; 0 for a fixed-size tensor
 */
typedef struct
{
  guint n_tensors;
  gsize size[P3D_MAX_TENSORS];
  gsize record[P3D_MAX_TENSORS];
} P3dTensorLayout;

/* Sum of the sizes (a variable tensor counts its capacity). */
gsize p3d_tensor_layout_get_total_size (const P3dTensorLayout * layout);
gboolean p3d_tensor_layout_is_equal (const P3dTensorLayout * a,
    const P3dTensorLayout * b);

/* Checks that @buffer fits @layout: one memory per tensor with each fixed
 * size exact and each variable size a whole number of records, or (for a
 * layout of fixed tensors only) any memories whose total is the layout's
 * size. On failure returns FALSE and, when @why is not NULL, a sentence
 * naming the tensor, its size and the size expected. */
gboolean p3d_tensor_layout_check_buffer (const P3dTensorLayout * layout,
    GstBuffer * buffer, gchar ** why);

/**
 * P3dTensorMap:
 * @n_tensors: tensors mapped
 * @data: each tensor's first byte (host, or device with P3D_MAP_CUDA)
 * @size: each tensor's size in bytes
 *
 * The mapping of every tensor of a buffer.
 */
typedef struct
{
  guint n_tensors;
  gpointer data[P3D_MAX_TENSORS];
  gsize size[P3D_MAX_TENSORS];

  /*< private > */
  GstBuffer *buffer;
  GstMapInfo info[P3D_MAX_TENSORS];
  gboolean whole;
  gpointer _gst_reserved[GST_PADDING];
} P3dTensorMap;

/* Maps every tensor of @buffer with @flags (GST_MAP_READ / GST_MAP_WRITE,
 * plus P3D_MAP_CUDA for device pointers, which needs one P3dCudaMemory per
 * tensor). The buffer must pass p3d_tensor_layout_check_buffer(). */
gboolean p3d_tensor_map (P3dTensorMap * map, GstBuffer * buffer,
    const P3dTensorLayout * layout, GstMapFlags flags, gchar ** why);
void p3d_tensor_unmap (P3dTensorMap * map);

/* TRUE when @buffer holds one P3dCudaMemory per tensor of @layout, all on
 * @device_id, so that its tensors can be read on that device as they are. */
gboolean p3d_tensor_buffer_is_on_device (GstBuffer * buffer,
    const P3dTensorLayout * layout, gint device_id);

/* Caps helpers: whether @features is memory:CUDAMemory; @caps with each
 * structure offered twice, in system memory and in CUDA memory, the first
 * one preferred (cuda_first picks which); every structure of @caps with
 * its features removed. ANY caps give ANY caps. */
gboolean p3d_caps_features_is_cuda (const GstCapsFeatures * features);
gboolean p3d_caps_is_cuda (const GstCaps * caps);
GstCaps *p3d_caps_with_both_memories (GstCaps * caps, gboolean cuda_first);
GstCaps *p3d_caps_without_features (const GstCaps * caps);

/* For negotiation: @caps in both memories as p3d_caps_with_both_memories()
 * when this machine has a CUDA device, in system memory only when it has
 * none, so that a pipeline asking for CUDA memory without a device fails
 * to link with a clear message instead of failing once it runs. Pad
 * templates keep offering both, so they are the same on every machine. */
GstCaps *p3d_caps_with_usable_memories (GstCaps * caps, gboolean cuda_first);

/* Whether the process has a usable CUDA device (looked for once). */
gboolean p3d_cuda_device_available (void);

G_END_DECLS

#endif /* __P3D_TENSOR_H__ */
