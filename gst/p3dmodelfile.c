/* gst-perception: loading the weights file of the network elements. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "p3dmodelfile.h"

P3dModel *
p3d_model_file_load (GstElement * element, const gchar * path)
{
  P3dWeights *weights;
  P3dModel *model;
  GError *error = NULL;

  if (path == NULL || path[0] == '\0') {
    GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
        ("No weights file given"),
        ("set the weights property to the model's .safetensors file"));
    return NULL;
  }
  weights = p3d_weights_open (path, &error);
  if (weights == NULL) {
    /* the reader reports a file it cannot open or map as ERROR_OPEN: a
     * resource error, as filesrc posts it; anything else is the content */
    if (!g_file_test (path, G_FILE_TEST_EXISTS))
      GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
          ("The weights file \"%s\" does not exist", path), ("%s",
              error->message));
    else if (g_error_matches (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_OPEN))
      GST_ELEMENT_ERROR (element, RESOURCE, OPEN_READ,
          ("Cannot read the weights file \"%s\"", path), ("%s",
              error->message));
    else
      GST_ELEMENT_ERROR (element, STREAM, DECODE,
          ("\"%s\" is not a usable weights file: %s", path, error->message),
          (NULL));
    g_error_free (error);
    return NULL;
  }
  model = p3d_model_new (weights, &error);
  p3d_weights_free (weights);
  if (model == NULL) {
    GST_ELEMENT_ERROR (element, STREAM, DECODE,
        ("The weights file \"%s\" does not hold a model we run: %s", path,
            error->message), (NULL));
    g_error_free (error);
    return NULL;
  }
  return model;
}

P3dModel *
p3d_model_file_load_property (GstElement * element, gchar * const *weights)
{
  P3dModel *model;
  gchar *path;

  GST_OBJECT_LOCK (element);
  path = g_strdup (*weights);
  GST_OBJECT_UNLOCK (element);
  model = p3d_model_file_load (element, path);
  g_free (path);
  return model;
}

void
p3d_model_file_clear (GstElement * element, P3dModel ** model)
{
  GST_OBJECT_LOCK (element);
  g_clear_pointer (model, p3d_model_free);
  GST_OBJECT_UNLOCK (element);
}
