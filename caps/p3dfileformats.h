/* gst-perception: the media types of the files the elements read and write.
 *
 * These carry bytes, not tensors, so they have no info struct: pcdparse
 * reads PCD files, boxparse and boxenc read and write box text (JSON lines
 * and KITTI label lines; docs/media-types.md describes both). They live here,
 * beside the tensor media types, so that an application or another plugin
 * names them from the library's headers.
 */
#ifndef __P3D_FILE_FORMATS_H__
#define __P3D_FILE_FORMATS_H__

/* What a source may call PCD bytes; pcdparse also takes them without caps
 * (filesrc, multifilesrc) and as text/plain or application/octet-stream. */
#define P3D_MEDIA_TYPE_PCD "application/x-pcd"

/* Box text: one JSON object per box and line, or one KITTI label line per
 * box. */
#define P3D_MEDIA_TYPE_JSON_LINES "application/x-json-lines"
#define P3D_MEDIA_TYPE_KITTI_LABELS "text/x-kitti-label"

#endif /* __P3D_FILE_FORMATS_H__ */
