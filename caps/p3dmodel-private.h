/* gst-perception: inside the model layer.  What a model family file
 * (p3dcenterpoint.c, p3dmodel-pointpillars.c, and the next ones) provides,
 * and what it may use: the JSON readers of `p3d.model` with their
 * messages, the builder that reads tensors and folds BatchNorm, the build
 * of a network from its graph, and what the pillar families share (their
 * grid, pillar net, SECOND and SECONDFPN).  Not installed. */
#ifndef __P3D_MODEL_PRIVATE_H__
#define __P3D_MODEL_PRIVATE_H__

#include <json-glib/json-glib.h>

#include "p3dmodel.h"
#include "p3dmodelgraph.h"
#include "p3dcenterpoint.h"

G_BEGIN_DECLS

/* ---- reading p3d.model ---------------------------------------------- */

/* Sets P3D_WEIGHTS_ERROR_BAD_METADATA: `p3d.model: "section.key" what`
 * (no section: `"key"`); returns FALSE. */
gboolean p3d_model_json_bad_key (GError ** error, const gchar * section,
    const gchar * key, const gchar * what);

/* The member @key of @object, NULL (and "is missing") when absent. */
JsonNode *p3d_model_json_member (JsonObject * object, const gchar * section,
    const gchar * key, GError ** error);
gboolean p3d_model_json_double (JsonObject * object, const gchar * section,
    const gchar * key, gdouble min, gdouble max, gdouble * value,
    GError ** error);
gboolean p3d_model_json_uint (JsonObject * object, const gchar * section,
    const gchar * key, guint min, guint max, guint * value, GError ** error);
/* @fallback when absent. */
gboolean p3d_model_json_boolean (JsonObject * object, const gchar * section,
    const gchar * key, gboolean fallback, gboolean * value, GError ** error);
const gchar *p3d_model_json_string (JsonObject * object,
    const gchar * section, const gchar * key, GError ** error);
JsonObject *p3d_model_json_object (JsonObject * object,
    const gchar * section, const gchar * key, GError ** error);
/* An array of @min_length..@max_length entries; its length in @length. */
JsonArray *p3d_model_json_array (JsonObject * object, const gchar * section,
    const gchar * key, guint min_length, guint max_length, guint * length,
    GError ** error);
gboolean p3d_model_json_doubles (JsonObject * object, const gchar * section,
    const gchar * key, guint n, gdouble min, gdouble max, gdouble * values,
    GError ** error);
/* An array of 1..max_length unsigned integers, or of exactly *length ones
 * when *length is nonzero on entry. */
gboolean p3d_model_json_uints (JsonObject * object, const gchar * section,
    const gchar * key, guint max_length, guint min, guint max,
    guint * values, guint * length, GError ** error);
gboolean p3d_model_json_node_uint (JsonNode * node, guint min, guint max,
    guint * value);
gboolean p3d_model_json_node_number (JsonNode * node, gdouble * value);

/* ---- the builder ------------------------------------------------------ */

/* What building a model reads from: the file, the tensors read so far, and
 * where the folded arrays go (the model's). */
typedef struct
{
  const P3dWeights *weights;
  GHashTable *used;             /* names of the tensors read */
  GPtrArray *arrays;            /* the model's */
} P3dModelBuilder;

/* @name read as float32 after checking its shape; the array belongs to
 * the model.  NULL with @error (MISSING_TENSOR, BAD_SHAPE, ...). */
gfloat *p3d_model_builder_read (P3dModelBuilder * builder, const gchar * name,
    guint n_dims, const gint64 * shape, GError ** error);

/* Folds the BatchNorm @prefix.{weight,bias,running_mean,running_var} into
 * @weight (p3d_model_fold_batchnorm(), @layer_bias may be NULL); returns
 * the bias, or NULL with @error (a missing tensor, a negative variance). */
gfloat *p3d_model_builder_fold_norm (P3dModelBuilder * builder,
    const gchar * prefix, gfloat * weight, guint n_outer, guint out_channels,
    guint inner, const gfloat * layer_bias, gdouble eps, GError ** error);

/* Builds @network from @graph: every tensor's shape, the layers' weights
 * looked up and checked, BatchNorm folded, a conv's lone following add or
 * ReLU fused into it, concatenated tensors written in place, slices read
 * in place, the outputs resolved; then the description validated.  FALSE
 * with @error naming the layer (BAD_METADATA) or the tensor. */
gboolean p3d_model_network_build (P3dModelNetwork * network,
    const P3dModelGraph * graph, P3dModelBuilder * builder, GError ** error);
void p3d_model_network_clear (P3dModelNetwork * network);

/* The graph of one network of `p3d.model`'s "graph" object. */
P3dModelGraph *p3d_model_graph_from_node (const gchar * name, JsonNode * node,
    GError ** error);

/* Sets P3D_WEIGHTS_ERROR_BAD_METADATA: `p3d.model: <text>` (a fault that
 * no one key names); returns FALSE. */
gboolean p3d_model_bad_metadata (GError ** error, const gchar * format, ...)
    G_GNUC_PRINTF (2, 3);

/* Appends a convolution (or a transposed one, by @op) making @name (taken)
 * from @input (NULL: the previous layer), square @kernel, @stride and
 * @padding, its weight @weight (taken) and, when @norm (taken) is not
 * NULL, that BatchNorm with @eps and a ReLU, as mmdetection3d's and
 * OpenPCDet's modules chain them. */
P3dModelLayer *p3d_model_graph_add_conv (P3dModelGraph * graph,
    P3dModelOp op, gchar * name, const gchar * input, guint out_channels,
    guint kernel, guint stride, guint padding, gchar * weight, gchar * norm,
    gdouble eps);

/* ---- what the pillar families share (p3dmodel-pillar.c) ---------------- */

/* The keys of @root that P3dModelPillarConfig holds: point_channels,
 * features, voxel_size, point_cloud_range, max_points, max_voxels, grid,
 * "pfn", "backbone" and "neck".  FALSE with @error naming the key. */
gboolean p3d_model_pillar_config_parse (P3dModelPillarConfig * config,
    JsonObject * root, GError ** error);

/* The state_dict names of a SECOND backbone and SECONDFPN neck: stage i's
 * convolution k is "<blocks>.<i>.<block_conv_offset + 3k>.weight" with its
 * BatchNorm at the next index (OpenPCDet's offset is 1: its index 0 is a
 * ZeroPad2d, which with an unpadded conv is our padding 1), and stage i's
 * up- or down-sampling "<deblocks>.<i>.0.weight", BatchNorm ".1". */
typedef struct
{
  const gchar *blocks;
  guint block_conv_offset;
  const gchar *deblocks;
} P3dModelSecondNames;

/* Appends to @graph (its input the pillar net's canvas) SECOND's layers
 * "backbone.<i>.<k>" (3x3 convs, the first of a stage strided, each with
 * BatchNorm and ReLU) and SECONDFPN's "neck.<i>" (a transposed conv for a
 * stride of at least 1, else a conv, BatchNorm, ReLU), concatenated on
 * channels as "neck", which is also an output.  FALSE with @error when the
 * neck's stages do not reach one map size. */
gboolean p3d_model_pillar_add_second (const P3dModelPillarConfig * config,
    const P3dModelSecondNames * names, P3dModelGraph * graph,
    GError ** error);

/* After the networks: @model's pillar net (model->pillars) from the
 * one-layer PFN "<pfn>.linear.weight" with the BatchNorm "<pfn>.norm"
 * folded, and the "bev" network's input checked to be its canvas. */
gboolean p3d_model_pillar_finish (P3dModel * model,
    P3dModelBuilder * builder, const P3dModelPillarConfig * config,
    const gchar * pfn, GError ** error);

/* ---- families --------------------------------------------------------- */

/* A family's decode of its head maps (p3dmodel.h's decoder). */
typedef struct
{
  /* The parameters (the family's own struct) for @network of @model; the
   * network outputs the decode reads appended to @outputs (const
   * P3dModelOutput *, NULL for an absent one), in the order the run
   * functions take their views. */
  gpointer (*params_new) (const P3dModel * model,
      const P3dModelNetwork * network, gboolean model_nms,
      GPtrArray * outputs, GError ** error);
  void (*params_free) (gpointer params);
  guint (*capacity) (gconstpointer params);
  /* whether the boxes have a velocity (P3dModelBoxes.velocity written) */
    gboolean (*velocity) (gconstpointer params);
  P3dcResult (*workspace_new) (gconstpointer params, gpointer * workspace);
  void (*workspace_free) (gpointer workspace);
  /* @views: one per output (zeroed for a NULL one) */
  P3dcResult (*run_cpu) (gconstpointer params, const P3dcMapView * views,
      const P3dModelBoxes * boxes);
  P3dcResult (*run_cuda) (gconstpointer params, gpointer workspace,
      const P3dcMapView * views, const P3dModelBoxes * boxes,
      P3dcCudaStream stream);
} P3dModelDecodeClass;

/* A model family: one `p3d.model` "architecture".  Adding a family is a
 * file defining one of these and a line in p3dmodel.c's table. */
struct _P3dModelFamily
{
  const gchar *architecture;
  guint version;                /* the one version read */
  /* the tool that writes its files, for messages */
  const gchar *converter;
  /* NULL-terminated: the state_dict prefixes of its modules; every tensor
   * under one must be used */
  const gchar *const *prefixes;
  /* NULL-terminated: its networks */
  const gchar *const *networks;
  /* The family's keys of @root into its config; NULL with @error naming
   * the key. */
    gpointer (*config_parse) (JsonObject * root, GError ** error);
  void (*config_free) (gpointer config);
  /* The graph of network @name when the metadata's "graph" does not give
   * it; NULL: the family's files must carry every network. */
  P3dModelGraph *(*build_graph) (gconstpointer config, const gchar * name,
      GError ** error);
  /* After the networks: the family's own tensors (a pillar net), checks
   * of the networks against the config.  May be NULL. */
    gboolean (*finish) (P3dModel * model, P3dModelBuilder * builder,
      GError ** error);
  /* NULL: the family decodes no boxes */
  const P3dModelDecodeClass *decode;
  /* When not NULL, the prefixes (as @prefixes) of the model whose config
   * this is, for a family whose files name their modules (PointPillars:
   * each framework its own); @prefixes is then NULL. */
  const gchar *const *(*config_prefixes) (gconstpointer config);
};

/* The families (p3dmodel.c's table). */
extern const P3dModelFamily p3d_model_family_centerpoint_pillar;
extern const P3dModelFamily p3d_model_family_bevdet;

/* ---- mmdetection3d's CenterHead, shared by the families that end in it -
 *
 * A family whose config struct starts with a P3dCenterPointConfig (only
 * its head, coder and test-NMS fields used) reads the "head" and "coder"
 * keys with p3d_center_head_parse(), builds the head's layers with
 * p3d_center_head_build(), checks its network's head outputs with
 * p3d_center_head_check() and decodes with p3d_center_head_decode (the
 * CenterPoint coder, and the config's test-time NMS: one for every task,
 * or per task with Scale-NMS when per_task_nms is set). */

/* "head" (tasks, heads, convs) and "coder" of @root into @config. */
gboolean p3d_center_head_parse (P3dCenterPointConfig * config,
    JsonObject * root, GError ** error);
/* The shared conv reading @input, then per task t and head h the
 * ConvModule and final conv of pts_bbox_head, tensors (and outputs)
 * "task<t>.<h>". */
void p3d_center_head_build (const P3dCenterPointConfig * config,
    P3dModelGraph * graph, const gchar * input);
/* Every task's head outputs of @network against the config; the heatmaps'
 * map (whose size the coder must agree with), or NULL with @error. */
const P3dcConvBufferDesc *p3d_center_head_check (const P3dCenterPointConfig
    * config, const P3dModelNetwork * network, GError ** error);
extern const P3dModelDecodeClass p3d_center_head_decode;

extern const P3dModelFamily p3d_model_family_pointpillars;

G_END_DECLS

#endif /* __P3D_MODEL_PRIVATE_H__ */
