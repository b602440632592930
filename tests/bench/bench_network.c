/* Benchmark of the network stage of a pillar model (CenterPoint-pillar,
 * PointPillars with an anchor head) on a real sweep, with the compute
 * library alone (no GStreamer pipeline):
 *
 *   bench_network --weights MODEL.safetensors --points SWEEP.bin
 *       [--format f16x5|f32x4] [--runs N] [--write-pillars FILE]
 *
 * --points: a headerless sweep, float16 x 5 (x y z intensity time: the
 * 271k-point nuScenes 10-sweep frame) or float32 x 4 (a KITTI .bin, time
 * then 0), widened or cut on the host to the model's point channels in
 * float32.  The model (p3d_model_new: any family, BatchNorm folded) gives
 * every setting: voxel size, range, max-points and max-voxels of voxelize,
 * the feature set of pillarfeat, pillarencode's folded PFN layer and grid,
 * the "bev" network's layer table, and its head's decode with the model's
 * test-time NMS (the P3dModelDecoder the element bevdetect runs).
 *
 * For F16 and for F32 storage (pillar features, canvas and network all in
 * the one type, as a pipeline negotiates them), after a warm-up, CUDA events
 * around each run, median (p10-p90) of --runs: each stage alone, the
 * network and decode together (bevdetect's work), and the whole chain from
 * the points already on the device to the kept boxes, every step queued
 * back to back on one stream with no host synchronization inside.  The
 * stages run in the element's steady state: each output buffer holds the
 * previous frame's output (output_clean), as a buffer pool recycles it.
 * Then the voxel count and the kept boxes of each storage, read back once,
 * show that the chain did its work.  The markdown table comes last.
 *
 * --write-pillars FILE: after the run, write the F32 pillar features as
 * one record of application/x-pillar-features (features, coords, count:
 * what filesink writes after pillarfeat), the input
 * tests/bench/bench_centerpoint_torch.py and bench_pointpillars_torch.py
 * time PyTorch on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boxes.h"
#include "convnet.h"
#include "p3dbench.h"
#include "p3dmodel.h"
#include "pillarencode.h"
#include "pillarfeat.h"
#include "voxelize.h"

#define WARMUP 20

/* What every storage shares: the points on the device and their voxels. */
typedef struct
{
  P3dcVoxelizer *voxelizer;
  float *points;
  gsize n_points;
  P3dcVoxelizeOutput out;
} Voxels;

/* One storage's stages, their device buffers and their arguments. */
typedef struct
{
  gboolean half;
  Voxels *voxels;
  P3dcPillarFeatParams feat_params;
  P3dcPillarFeatCuda *feat;
  P3dcPillarFeatInput feat_in;
  P3dcPillarFeatOutput feat_out;
  P3dcPillarEncoder *encoder;
  P3dcPillarEncodeInput encode_in;
  void *canvas;
  P3dcConvNet *net;
  const P3dModelDecoder *decoder;
  P3dModelDecodeWorkspace *decode_workspace;
  P3dModelBoxes boxes;
} Chain;

static P3dcResult
step_voxelize (gpointer user_data, P3dcCudaStream stream)
{
  Voxels *v = ((Chain *) user_data)->voxels;

  return p3dc_voxelize_cuda (v->voxelizer, v->points, v->n_points, &v->out,
      1, stream);
}

static P3dcResult
step_pillarfeat (gpointer user_data, P3dcCudaStream stream)
{
  Chain *c = user_data;

  return p3dc_pillarfeat_cuda (c->feat, &c->feat_in, &c->feat_out, 1, stream);
}

static P3dcResult
step_pillarencode (gpointer user_data, P3dcCudaStream stream)
{
  Chain *c = user_data;

  return p3dc_pillarencode_cuda (c->encoder, &c->encode_in, c->canvas, NULL,
      stream);
}

static P3dcResult
step_network (gpointer user_data, P3dcCudaStream stream)
{
  Chain *c = user_data;

  return p3dc_convnet_cuda_run (c->net, c->canvas, c->half, stream);
}

static P3dcResult
step_decode (gpointer user_data, P3dcCudaStream stream)
{
  Chain *c = user_data;

  return p3d_model_decoder_run_cuda (c->decoder, c->decode_workspace, c->net,
      &c->boxes, stream);
}

/* bevdetect's work: the network, then the decode of its maps. */
static P3dcResult
step_detect (gpointer user_data, P3dcCudaStream stream)
{
  P3dcResult result = step_network (user_data, stream);

  return result != P3DC_OK ? result : step_decode (user_data, stream);
}

/* Points on the device to kept boxes. */
static P3dcResult
step_chain (gpointer user_data, P3dcCudaStream stream)
{
  static const P3dBenchFunc steps[] = { step_voxelize, step_pillarfeat,
    step_pillarencode, step_network, step_decode
  };
  P3dcResult result = P3DC_OK;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (steps) && result == P3DC_OK; i++)
    result = steps[i] (user_data, stream);
  return result;
}

static gpointer
device_alloc (gsize size)
{
  void *ptr = NULL;

  P3D_BENCH_CHECK (p3dc_cuda_malloc (&ptr, size));
  return ptr;
}

static void
voxels_init (Voxels * v, const P3dModelPillars * config,
    const gfloat * points, gsize n_points, guint channels,
    P3dcCudaStream stream)
{
  P3dcVoxelizeParams params;
  gsize slots = (gsize) config->max_voxels * config->max_points;

  P3D_BENCH_CHECK (p3dc_voxelize_params_init (&params, config->voxel_size,
          config->point_cloud_range, channels, config->max_points,
          config->max_voxels));
  P3D_BENCH_CHECK (p3dc_voxelizer_new (&params, n_points, &v->voxelizer));
  v->n_points = n_points;
  v->points = device_alloc (n_points * channels * sizeof (gfloat));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (v->points, points,
          n_points * channels * sizeof (gfloat), stream));
  memset (&v->out, 0, sizeof v->out);
  v->out.voxels = device_alloc (slots * channels * sizeof (gfloat));
  v->out.num_points = device_alloc (config->max_voxels * sizeof (guint32));
  v->out.coords = device_alloc (config->max_voxels * 4 * sizeof (gint32));
  v->out.count = device_alloc (sizeof (guint32));
  v->out.stats = NULL;
  /* every byte once, so that later runs are the steady state */
  P3D_BENCH_CHECK (p3dc_voxelize_cuda (v->voxelizer, v->points, n_points,
          &v->out, 0, stream));
}

static void
voxels_clear (Voxels * v)
{
  p3dc_voxelizer_free (v->voxelizer);
  p3dc_cuda_free (v->points);
  p3dc_cuda_free (v->out.voxels);
  p3dc_cuda_free (v->out.num_points);
  p3dc_cuda_free (v->out.coords);
  p3dc_cuda_free (v->out.count);
}

static void
chain_init (Chain * c, const P3dModel * model, const P3dModelDecoder * decoder,
    Voxels * voxels, guint channels, gboolean half, P3dcCudaStream stream)
{
  const P3dModelPillars *config = model->pillars;
  const P3dModelNetwork *network = p3d_model_get_network (model, "bev");
  P3dcPillarEncodeParams encode = { 0, };
  char message[512] = "";
  P3dcResult result;

  memset (c, 0, sizeof *c);
  c->half = half;
  c->voxels = voxels;

  /* pillarfeat: the model's feature set (P3dFeatureSet and
   * P3dcPillarFeatureSet share their values); intensity is channel 3 */
  P3D_BENCH_CHECK (p3dc_pillarfeat_params_init (&c->feat_params,
          (P3dcPillarFeatureSet) config->features, half, channels, 3,
          config->max_points, config->max_voxels, config->voxel_size,
          config->point_cloud_range));
  if (p3dc_pillar_feature_count (c->feat_params.features) !=
      config->in_channels) {
    g_printerr ("the feature set gives %u features, the PFN takes %u\n",
        p3dc_pillar_feature_count (c->feat_params.features),
        config->in_channels);
    exit (1);
  }
  P3D_BENCH_CHECK (p3dc_pillarfeat_cuda_new (&c->feat_params, &c->feat));
  c->feat_in.voxels = voxels->out.voxels;
  c->feat_in.num_points = voxels->out.num_points;
  c->feat_in.coords = voxels->out.coords;
  c->feat_in.count = voxels->out.count;
  c->feat_out.features =
      device_alloc (p3dc_pillarfeat_features_size (&c->feat_params));
  c->feat_out.coords = device_alloc (config->max_voxels * 4 * sizeof (gint32));
  c->feat_out.count = device_alloc (sizeof (guint32));
  P3D_BENCH_CHECK (p3dc_pillarfeat_cuda (c->feat, &c->feat_in,
          &c->feat_out, 0, stream));

  /* pillarencode: the folded PFN layer onto the model's canvas */
  encode.in_channels = config->in_channels;
  encode.out_channels = config->out_channels;
  encode.max_points = config->max_points;
  encode.max_voxels = config->max_voxels;
  encode.grid_x = config->grid[0];
  encode.grid_y = config->grid[1];
  encode.half_in = encode.half_out = half;
  P3D_BENCH_CHECK (p3dc_pillarencoder_new (&encode, config->weight,
          config->bias, &c->encoder));
  c->encode_in.features = c->feat_out.features;
  c->encode_in.coords = c->feat_out.coords;
  c->encode_in.count = c->feat_out.count;
  c->canvas = device_alloc (p3dc_pillarencode_canvas_size (&encode));

  /* the network, its input the canvas (buffer 0) */
  result = p3dc_convnet_cuda_new (&network->desc, half, &c->net, message,
      sizeof message);
  if (result != P3DC_OK) {
    g_printerr ("creating the %s network failed: %s (%s)\n",
        half ? "F16" : "F32", message, p3dc_result_string (result));
    exit (1);
  }

  /* the head's decode with the model's test-time NMS, reading the head's
   * buffers where they are */
  c->decoder = decoder;
  P3D_BENCH_CHECK (p3d_model_decoder_workspace_new (decoder,
          &c->decode_workspace));
  c->boxes.boxes = device_alloc (p3d_model_decoder_get_capacity (decoder) *
      sizeof (P3dcBox3d));
  c->boxes.count = device_alloc (sizeof (guint32));
  c->boxes.velocity = NULL;
}

static void
chain_clear (Chain * c)
{
  p3dc_pillarfeat_cuda_free (c->feat);
  p3dc_cuda_free (c->feat_out.features);
  p3dc_cuda_free (c->feat_out.coords);
  p3dc_cuda_free (c->feat_out.count);
  p3dc_pillarencoder_free (c->encoder);
  p3dc_cuda_free (c->canvas);
  p3dc_convnet_cuda_free (c->net);
  p3d_model_decode_workspace_free (c->decode_workspace);
  p3dc_cuda_free (c->boxes.boxes);
  p3dc_cuda_free (c->boxes.count);
}

static guint32
read_count (const guint32 * device_count, P3dcCudaStream stream)
{
  guint32 count = 0;

  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (&count, device_count, sizeof count,
          stream));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
  return count;
}

/* The F32 pillar features as filesink writes an x-pillar-features buffer:
 * features [max_voxels][max_points][F], coords [max_voxels][4], count. */
static gboolean
write_pillars (const gchar * path, const Chain * c, P3dcCudaStream stream)
{
  gsize features = p3dc_pillarfeat_features_size (&c->feat_params);
  gsize coords = (gsize) c->feat_params.max_voxels * 4 * sizeof (gint32);
  guint8 *host = g_malloc (features + coords + sizeof (guint32));
  GError *error = NULL;
  gboolean ok;

  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (host, c->feat_out.features,
          features, stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (host + features, c->feat_out.coords,
          coords, stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (host + features + coords,
          c->feat_out.count, sizeof (guint32), stream));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
  ok = g_file_set_contents (path, (const gchar *) host,
      features + coords + sizeof (guint32), &error);
  if (!ok) {
    g_printerr ("cannot write %s: %s\n", path, error->message);
    g_error_free (error);
  }
  g_free (host);
  return ok;
}

typedef struct
{
  const gchar *name;
  P3dBenchFunc func;
} Stage;

static const Stage stages[] = {
  {"voxelize", step_voxelize},
  {"pillarfeat", step_pillarfeat},
  {"pillarencode (PFN + scatter)", step_pillarencode},
  {"network (backbone + neck + head)", step_network},
  {"decode + test NMS (the head's)", step_decode},
  {"bevdetect: network + decode", step_detect},
  {"**whole chain**, points on the GPU to kept boxes", step_chain},
};

#define N_STAGES G_N_ELEMENTS (stages)

int
main (int argc, char **argv)
{
  gint runs = 200;
  gchar *weights_path = NULL, *points_path = NULL, *format = NULL;
  gchar *pillars_path = NULL;
  GOptionEntry entries[] = {
    {"weights", 0, 0, G_OPTION_ARG_FILENAME, &weights_path,
        "the model's safetensors file", "FILE"},
    {"points", 0, 0, G_OPTION_ARG_FILENAME, &points_path,
        "a headerless lidar sweep", "FILE"},
    {"format", 0, 0, G_OPTION_ARG_STRING, &format,
          "f16x5 (nuScenes: x y z i t, float16; default) or f32x4 (KITTI)",
        "FORMAT"},
    {"runs", 0, 0, G_OPTION_ARG_INT, &runs, "timed runs per case (200)", "N"},
    {"write-pillars", 0, 0, G_OPTION_ARG_FILENAME, &pillars_path,
        "write the F32 pillar features record here", "FILE"},
    {NULL}
  };
  GOptionContext *context =
      g_option_context_new ("- time a pillar model's network stage");
  GError *error = NULL;
  P3dWeights *weights;
  P3dModel *model;
  P3dModelDecoder *decoder;
  const P3dModelPillars *config;
  P3dcCudaStream stream = NULL;
  P3dBenchStats stats[2][N_STAGES];
  guint32 voxel_count = 0, kept[2] = { 0, 0 };
  char device_name[256] = "", message[512] = "";
  int major = 0, minor = 0, sms = 0;
  gboolean half_file;
  guint file_channels, channels, pass, s;
  gsize n_points = 0;
  gfloat *points;
  Voxels voxels;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 2;
  }
  g_option_context_free (context);
  if (weights_path == NULL || points_path == NULL) {
    g_printerr ("--weights and --points are required (see --help)\n");
    return 2;
  }
  if (format == NULL || g_strcmp0 (format, "f16x5") == 0) {
    half_file = TRUE;
    file_channels = 5;
  } else if (g_strcmp0 (format, "f32x4") == 0) {
    half_file = FALSE;
    file_channels = 4;
  } else {
    g_printerr ("--format is f16x5 or f32x4, not \"%s\"\n", format);
    return 2;
  }
  if (runs < 1) {
    g_printerr ("--runs must be at least 1\n");
    return 2;
  }

  weights = p3d_weights_open (weights_path, &error);
  if (weights == NULL) {
    g_printerr ("%s: %s\n", weights_path, error->message);
    return 1;
  }
  model = p3d_model_new (weights, &error);
  p3d_weights_free (weights);
  if (model == NULL) {
    g_printerr ("%s: %s\n", weights_path, error->message);
    return 1;
  }
  decoder = model->pillars != NULL ? p3d_model_decoder_new (model, "bev", TRUE,
      &error) : NULL;
  if (decoder == NULL) {
    g_printerr ("%s: a %s model, not a pillar detector: %s\n", weights_path,
        model->architecture, error ? error->message : "no pillar net");
    return 1;
  }
  config = model->pillars;
  channels = config->point_channels;
  points = p3d_bench_load_points (points_path, file_channels, half_file,
      channels, &n_points);
  if (points == NULL)
    return 1;

  if (p3dc_cuda_device_count () == 0) {
    g_printerr ("no CUDA device: %s\n",
        p3dc_result_string (p3dc_cuda_device_probe ()));
    return 1;
  }
  if (p3dc_convnet_cuda_available (message, sizeof message) != P3DC_OK) {
    g_printerr ("%s\n", message);
    return 1;
  }
  P3D_BENCH_CHECK (p3dc_cuda_device_describe (0, device_name,
          sizeof device_name, &major, &minor, &sms));
  P3D_BENCH_CHECK (p3dc_cuda_stream_create (&stream));

  voxels_init (&voxels, config, points, n_points, channels, stream);
  voxel_count = read_count (voxels.out.count, stream);

  /* pass 0 in F16, pass 1 in F32 */
  for (pass = 0; pass < 2; pass++) {
    Chain chain;

    chain_init (&chain, model, decoder, &voxels, channels, pass == 0, stream);
    for (s = 0; s < N_STAGES; s++)
      P3D_BENCH_CHECK (p3d_bench_gpu (stages[s].func, &chain, stream, WARMUP,
              runs, &stats[pass][s]));
    /* one more frame, then what it kept */
    P3D_BENCH_CHECK (step_chain (&chain, stream));
    kept[pass] = read_count (chain.boxes.count, stream);
    if (pass == 1 && pillars_path != NULL
        && !write_pillars (pillars_path, &chain, stream))
      return 1;
    chain_clear (&chain);
  }

  g_print ("%s network stage on %s (sm_%d%d, %d SMs)\n",
      model->architecture, device_name, major, minor, sms);
  g_print ("model %s: grid %u x %u, voxel %g x %g m, max-points %u, "
      "max-voxels %u, features %s, %u network layers, up to %u boxes\n",
      weights_path, config->grid[0], config->grid[1], config->voxel_size[0],
      config->voxel_size[1], config->max_points, config->max_voxels,
      p3d_feature_set_to_string (config->features),
      p3d_model_get_network (model, "bev")->desc.n_layers,
      p3d_model_decoder_get_capacity (decoder));
  g_print ("points %s: %" G_GSIZE_FORMAT " (%s), pillars %u%s\n",
      points_path, n_points, half_file ? "float16 x 5" : "float32 x 4",
      voxel_count, voxel_count == config->max_voxels ?
      " (max-voxels reached)" : "");
  g_print ("kept boxes after the test NMS: F16 %u, F32 %u\n", kept[0], kept[1]);
  if (pillars_path != NULL)
    g_print ("F32 pillar features written to %s\n", pillars_path);
  g_print ("\nGPU time per frame in us by CUDA events, median (p10-p90) of "
      "%d runs after %d warm-up runs; each row alone on its stream\n\n",
      runs, WARMUP);
  g_print ("| stage | F16 | F32 |\n| --- | ---: | ---: |\n");
  for (s = 0; s < N_STAGES; s++)
    g_print ("| %s | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) |\n", stages[s].name,
        stats[0][s].median_us, stats[0][s].p10_us, stats[0][s].p90_us,
        stats[1][s].median_us, stats[1][s].p10_us, stats[1][s].p90_us);

  voxels_clear (&voxels);
  p3dc_cuda_stream_destroy (stream);
  p3d_model_decoder_free (decoder);
  p3d_model_free (model);
  g_free (points);
  g_free (weights_path);
  g_free (points_path);
  g_free (format);
  g_free (pillars_path);
  return 0;
}
