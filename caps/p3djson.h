/* gst-perception: reading JSON that users hand over (safetensors headers,
 * a model's `p3d.model` metadata and its graphs, calibration files, box
 * JSON lines) without letting its nesting overflow the stack.
 *
 * json-glib's parser recurses once per level of nesting, so a document of
 * 100 000 opening brackets (200 KB) overflows the stack of the thread that
 * parses it. A scan of the bytes, cheap and without recursion, refuses a
 * document nested deeper than P3D_JSON_MAX_DEPTH before the parser sees
 * it: far deeper than any document of ours (a model's graph is 6 levels
 * deep), far below what the stack of a streaming thread holds.
 *
 * GLib and json-glib only: built as a static library for the caps library
 * and for the plugin's GStreamer-free cores (p3dcalibration, p3dboxtext).
 */
#ifndef __P3D_JSON_H__
#define __P3D_JSON_H__

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define P3D_JSON_MAX_DEPTH 64

/* TRUE when no value of @text (@length bytes, or up to its NUL with -1)
 * lies inside more than P3D_JSON_MAX_DEPTH objects and arrays; otherwise
 * FALSE and @error (JSON_PARSER_ERROR_PARSE) saying so and at which byte.
 * Brackets inside strings do not count; the text need not be valid JSON
 * (the parser says what else is wrong with it). */
gboolean p3d_json_check_depth (const gchar * text, gssize length,
    GError ** error);

/* json_parser_load_from_data () of a text p3d_json_check_depth () accepts;
 * its error otherwise. */
gboolean p3d_json_parser_load (JsonParser * parser, const gchar * text,
    gssize length, GError ** error);

G_END_DECLS

#endif /* __P3D_JSON_H__ */
