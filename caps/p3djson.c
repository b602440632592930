/* JSON with a bounded nesting depth; see p3djson.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3djson.h"

gboolean
p3d_json_check_depth (const gchar * text, gssize length, GError ** error)
{
  gsize size = length < 0 ? strlen (text) : (gsize) length, i;
  guint depth = 0;

  for (i = 0; i < size; i++) {
    switch (text[i]) {
      case '"':
        /* to the closing quote, past escaped characters */
        for (i++; i < size && text[i] != '"'; i++)
          if (text[i] == '\\')
            i++;
        break;
      case '{':
      case '[':
        if (++depth > P3D_JSON_MAX_DEPTH) {
          g_set_error (error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_PARSE,
              "nested more than %d levels deep (at byte %" G_GSIZE_FORMAT
              "): not a document of ours", P3D_JSON_MAX_DEPTH, i);
          return FALSE;
        }
        break;
      case '}':
      case ']':
        if (depth > 0)
          depth--;
        break;
      default:
        break;
    }
  }
  return TRUE;
}

gboolean
p3d_json_parser_load (JsonParser * parser, const gchar * text,
    gssize length, GError ** error)
{
  return p3d_json_check_depth (text, length, error)
      && json_parser_load_from_data (parser, text, length, error);
}
