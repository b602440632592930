/* Benchmark of a BEVDet model's camera chain with the compute library alone
 * (no GStreamer pipeline): the six camera frames on the device to the kept
 * boxes, as camencode ! bevpool ! bevdetect compute them.
 *
 *   bench_bevdet --weights MODEL.safetensors --calibration CALIB.json
 *       [--rgb DIR] [--runs N]
 *
 * The model (p3d_model_new: the bevdet family) gives every setting: the
 * cameras and their test-time resize and crop, the normalisation, the
 * "image" and "bev" networks, the grid, the decode and its Scale-NMS.
 * CALIB.json is bevpool's calibration file, the cameras in the model's
 * order (tests/reference/bevdet_torch.py calibration writes it from an
 * mmdetection3d info file).  --rgb DIR: each camera's frame as raw RGB
 * bytes, DIR/<camera name>.rgb of the model's src size (bevdet_torch.py
 * decode writes them from the JPEGs); without it random frames.
 *
 * The steps, each as its element runs it, in F16 (the elements' default)
 * and F32 storage:
 *  - camencode: camprep (resize, crop and normalise each frame, PIL's
 *    arithmetic), the image network (ResNet, FPNForBEVDet, depth net and
 *    softmax: one CUDA graph), camfeatures (its depth and features into
 *    the application/x-camera-features tensors);
 *  - bevpool: the pooling of every frustum point into the BEV grid (the
 *    geometry computed once before, as the element does while the
 *    calibration stays);
 *  - bevdetect: the BEV network (ResNetForBEVDet, FPN_LSS, CenterHead: one
 *    CUDA graph) and the decode with Scale-NMS to the kept boxes;
 *  - the whole chain queued back to back on one stream, no host
 *    synchronization inside.
 * CUDA events around each run after a warm-up, median (p10-p90) of --runs
 * (default 200).  Then each storage's kept boxes, read back once, and a
 * markdown table last. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bevpool.h"
#include "camfeatures.h"
#include "camprep.h"
#include "convnet.h"
#include "p3dbench.h"
#include "p3dcalibration.h"
#include "p3dmodel.h"
#include "p3dweights.h"

#define WARMUP 20

typedef struct
{
  gboolean half;
  const P3dModel *model;
  const P3dModelNetwork *image, *bev;
  guint n_cameras;
  /* camencode */
  P3dcCamPrepCuda *prep;
  P3dcCamPrepFrame frames[P3DC_CAMPREP_MAX_CAMERAS];
  void *input;                  /* [N][3][H][W] */
  P3dcConvNet *image_net;
  P3dcCamFeaturesPack pack_features, pack_depth;
  P3dcMapView view_features, view_depth;
  void *features, *depth;       /* application/x-camera-features */
  /* bevpool */
  P3dcBevGeometryCuda *geometry;
  void *canvas;                 /* application/x-bev-features */
  /* bevdetect */
  P3dcConvNet *bev_net;
  P3dModelDecoder *decoder;
  P3dModelDecodeWorkspace *workspace;
  P3dModelBoxes boxes;
  guint capacity;
} Chain;

static P3dcResult
step_prep (gpointer user_data, P3dcCudaStream stream)
{
  Chain *c = user_data;

  return p3dc_camprep_cuda_run (c->prep, c->frames, c->input, c->half, stream);
}

static P3dcResult
step_image_net (gpointer user_data, P3dcCudaStream stream)
{
  Chain *c = user_data;

  return p3dc_convnet_cuda_run (c->image_net, c->input, c->half, stream);
}

static P3dcResult
step_pack (gpointer user_data, P3dcCudaStream stream)
{
  Chain *c = user_data;
  P3dcResult result = p3dc_camfeatures_pack_cuda (&c->pack_features,
      &c->view_features, c->features, stream);

  if (result != P3DC_OK)
    return result;
  return p3dc_camfeatures_pack_cuda (&c->pack_depth, &c->view_depth, c->depth,
      stream);
}

static P3dcResult
step_camencode (gpointer user_data, P3dcCudaStream stream)
{
  P3dcResult result = step_prep (user_data, stream);

  if (result == P3DC_OK)
    result = step_image_net (user_data, stream);
  if (result == P3DC_OK)
    result = step_pack (user_data, stream);
  return result;
}

static P3dcResult
step_bevpool (gpointer user_data, P3dcCudaStream stream)
{
  Chain *c = user_data;

  return p3dc_bevpool_cuda (c->geometry, c->features, c->depth, c->half,
      c->canvas, c->half, stream);
}

static P3dcResult
step_bev_net (gpointer user_data, P3dcCudaStream stream)
{
  Chain *c = user_data;

  return p3dc_convnet_cuda_run (c->bev_net, c->canvas, c->half, stream);
}

static P3dcResult
step_decode (gpointer user_data, P3dcCudaStream stream)
{
  Chain *c = user_data;

  return p3d_model_decoder_run_cuda (c->decoder, c->workspace, c->bev_net,
      &c->boxes, stream);
}

static P3dcResult
step_bevdetect (gpointer user_data, P3dcCudaStream stream)
{
  P3dcResult result = step_bev_net (user_data, stream);

  if (result == P3DC_OK)
    result = step_decode (user_data, stream);
  return result;
}

static P3dcResult
step_chain (gpointer user_data, P3dcCudaStream stream)
{
  P3dcResult result = step_camencode (user_data, stream);

  if (result == P3DC_OK)
    result = step_bevpool (user_data, stream);
  if (result == P3DC_OK)
    result = step_bevdetect (user_data, stream);
  return result;
}

static void *
device_alloc (gsize size)
{
  void *ptr = NULL;

  P3D_BENCH_CHECK (p3dc_cuda_malloc (&ptr, MAX (size, 4)));
  return ptr;
}

/* The frames of every camera on the device: raw RGB files, or random. */
static void
load_frames (Chain * c, const gchar * rgb_dir, guint width, guint height,
    P3dcCudaStream stream)
{
  gsize size = (gsize) width * height * 3, i;
  guint k;

  for (k = 0; k < c->n_cameras; k++) {
    guint8 *host;
    void *device = device_alloc (size);

    if (rgb_dir != NULL) {
      gchar *path = g_strdup_printf ("%s/%s.rgb", rgb_dir,
          c->model->cameras->names[k]);
      gsize got = 0;

      host = p3d_bench_read_file (path, &got);
      if (host == NULL || got != size) {
        g_printerr ("%s: %" G_GSIZE_FORMAT " bytes, not %u x %u RGB\n", path,
            got, width, height);
        exit (1);
      }
      g_free (path);
    } else {
      host = g_malloc (size);
      for (i = 0; i < size; i++)
        host[i] = (guint8) ((i * 2654435761u + k * 97u) >> 13);
    }
    P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (device, host, size, stream));
    P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
    g_free (host);
    c->frames[k].planes[0] = device;
    c->frames[k].strides[0] = (gint32) (width * 3);
  }
}

static void
chain_init (Chain * c, const P3dModel * model, const P3dCalibration * calib,
    gboolean half, const gchar * rgb_dir, P3dcCudaStream stream)
{
  const P3dModelCameras *cameras = model->cameras;
  const P3dModelOutput *depth_out, *features_out;
  P3dcCamPrepPlan *plans[P3DC_CAMPREP_MAX_CAMERAS];
  const P3dcConvBufferDesc *map;
  P3dcBevPoolParams pool;
  P3dcCamPrepNorm norm;
  P3dModelImageTransform t;
  GError *error = NULL;
  gchar message[256];
  gfloat mean[3], std[3];
  gsize e = half ? 2 : 4;
  guint k;

  memset (c, 0, sizeof (*c));
  c->half = half;
  c->model = model;
  c->n_cameras = cameras->n_cameras;
  c->image = p3d_model_get_network (model, "image");
  c->bev = p3d_model_get_network (model, "bev");

  /* camencode: the frames' test-time transform and normalisation */
  if (!p3d_model_cameras_image_transform (cameras, cameras->src_width,
          cameras->src_height, &t)) {
    g_printerr ("the model's src size has no test-time crop\n");
    exit (1);
  }
  for (k = 0; k < 3; k++) {
    mean[k] = (gfloat) cameras->mean[k];
    std[k] = (gfloat) cameras->std[k];
  }
  p3dc_camprep_norm_init_divide (&norm, mean, std, 255.0f);
  for (k = 0; k < c->n_cameras; k++) {
    P3dcCamPrepParams params;

    memset (&params, 0, sizeof (params));
    params.layout = P3DC_CAMPREP_PACKED_RGB;
    params.width = cameras->src_width;
    params.height = cameras->src_height;
    params.pixel_stride = 3;
    params.offsets[0] = 0;
    params.offsets[1] = 1;
    params.offsets[2] = 2;
    params.filter = P3DC_CAMPREP_BICUBIC;
    params.resize_width = t.scaled_width;
    params.resize_height = t.scaled_height;
    params.crop_x = t.crop_x;
    params.crop_y = t.crop_y;
    params.out_width = cameras->input_width;
    params.out_height = cameras->input_height;
    P3D_BENCH_CHECK (p3dc_camprep_plan_new (&params, &plans[k]));
  }
  P3D_BENCH_CHECK (p3dc_camprep_cuda_new ((const P3dcCamPrepPlan *
              const *) plans, c->n_cameras, &norm, &c->prep));
  for (k = 0; k < c->n_cameras; k++)
    p3dc_camprep_plan_free (plans[k]);
  load_frames (c, rgb_dir, cameras->src_width, cameras->src_height, stream);
  c->input = device_alloc (p3dc_convnet_buffer_elements (&c->image->desc,
          0) * e);
  if (p3dc_convnet_cuda_new (&c->image->desc, half, &c->image_net, message,
          sizeof (message)) != P3DC_OK) {
    g_printerr ("image network: %s\n", message);
    exit (1);
  }
  depth_out = p3d_model_network_get_output (c->image, "depth");
  features_out = p3d_model_network_get_output (c->image, "features");
  P3D_BENCH_CHECK (p3dc_convnet_cuda_view (c->image_net, depth_out->buffer,
          &c->view_depth));
  p3dc_map_view_offset_channels (&c->view_depth, depth_out->channel_offset);
  P3D_BENCH_CHECK (p3dc_convnet_cuda_view (c->image_net,
          features_out->buffer, &c->view_features));
  p3dc_map_view_offset_channels (&c->view_features,
      features_out->channel_offset);
  map = &c->image->desc.buffers[depth_out->buffer];
  c->pack_features.batch = c->pack_depth.batch = c->n_cameras;
  c->pack_features.height = c->pack_depth.height = map->height;
  c->pack_features.width = c->pack_depth.width = map->width;
  c->pack_features.channels = features_out->channels;
  c->pack_features.channels_last = 1;
  c->pack_depth.channels = depth_out->channels;
  c->pack_features.half_out = c->pack_depth.half_out = half;

  /* bevpool on the model's grid */
  memset (&pool, 0, sizeof (pool));
  pool.cameras = c->n_cameras;
  pool.channels = features_out->channels;
  pool.image_width = cameras->input_width;
  pool.image_height = cameras->input_height;
  pool.feat_width = map->width;
  pool.feat_height = map->height;
  memcpy (pool.dbound, cameras->dbound, sizeof (pool.dbound));
  memcpy (pool.xbound, cameras->xbound, sizeof (pool.xbound));
  memcpy (pool.ybound, cameras->ybound, sizeof (pool.ybound));
  memcpy (pool.zbound, cameras->zbound, sizeof (pool.zbound));
  pool.rounding = P3DC_BEV_ROUND_TRUNCATE;
  pool.layout = P3DC_BEV_LAYOUT_YX;
  P3D_BENCH_CHECK (p3dc_bevpool_params_init (&pool));
  c->features = device_alloc (p3dc_bevpool_features_size (&pool) * e);
  c->depth = device_alloc (p3dc_bevpool_depth_size (&pool) * e);
  c->canvas = device_alloc (p3dc_bevpool_output_size (&pool) * e);
  P3D_BENCH_CHECK (p3dc_bevpool_geometry_cuda_new (&pool, &c->geometry));
  P3D_BENCH_CHECK (p3dc_bevpool_geometry_compute_cuda (c->geometry,
          calib->cameras, stream));

  /* bevdetect */
  if (p3dc_convnet_cuda_new (&c->bev->desc, half, &c->bev_net, message,
          sizeof (message)) != P3DC_OK) {
    g_printerr ("BEV network: %s\n", message);
    exit (1);
  }
  c->decoder = p3d_model_decoder_new (model, "bev", TRUE, &error);
  if (c->decoder == NULL) {
    g_printerr ("%s\n", error->message);
    exit (1);
  }
  P3D_BENCH_CHECK (p3d_model_decoder_workspace_new (c->decoder, &c->workspace));
  c->capacity = p3d_model_decoder_get_capacity (c->decoder);
  c->boxes.boxes = device_alloc (c->capacity * 36);
  c->boxes.count = device_alloc (4);
  c->boxes.velocity = device_alloc (c->capacity * 8);
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
}

static void
chain_clear (Chain * c)
{
  guint k;

  for (k = 0; k < c->n_cameras; k++)
    p3dc_cuda_free ((void *) c->frames[k].planes[0]);
  p3dc_camprep_cuda_free (c->prep);
  p3dc_convnet_cuda_free (c->image_net);
  p3dc_convnet_cuda_free (c->bev_net);
  p3dc_bevpool_geometry_cuda_free (c->geometry);
  p3d_model_decode_workspace_free (c->workspace);
  p3d_model_decoder_free (c->decoder);
  p3dc_cuda_free (c->input);
  p3dc_cuda_free (c->features);
  p3dc_cuda_free (c->depth);
  p3dc_cuda_free (c->canvas);
  p3dc_cuda_free (c->boxes.boxes);
  p3dc_cuda_free (c->boxes.count);
  p3dc_cuda_free (c->boxes.velocity);
}

typedef struct
{
  const gchar *name;
  P3dBenchFunc func;
} Step;

static const Step steps[] = {
  {"camencode: camprep (resize, crop, normalise)", step_prep},
  {"camencode: image network", step_image_net},
  {"camencode: camfeatures (outputs to camera features)", step_pack},
  {"camencode, all", step_camencode},
  {"bevpool: pooling", step_bevpool},
  {"bevdetect: BEV network", step_bev_net},
  {"bevdetect: decode and Scale-NMS", step_decode},
  {"bevdetect, all", step_bevdetect},
  {"whole chain, frames to kept boxes", step_chain},
};

int
main (int argc, char **argv)
{
  const gchar *weights_path = NULL, *calib_path = NULL, *rgb_dir = NULL;
  guint runs = 200, i, s, precision;
  P3dBenchStats stats[2][G_N_ELEMENTS (steps)];
  guint kept[2];
  GError *error = NULL;
  P3dWeights *weights;
  P3dModel *model;
  P3dCalibration *calib;
  P3dcCudaStream stream;

  for (i = 1; i < (guint) argc; i++) {
    if (strcmp (argv[i], "--weights") == 0 && i + 1 < (guint) argc)
      weights_path = argv[++i];
    else if (strcmp (argv[i], "--calibration") == 0 && i + 1 < (guint) argc)
      calib_path = argv[++i];
    else if (strcmp (argv[i], "--rgb") == 0 && i + 1 < (guint) argc)
      rgb_dir = argv[++i];
    else if (strcmp (argv[i], "--runs") == 0 && i + 1 < (guint) argc) {
      /* one ++i: MAX evaluates its arguments twice */
      gint value = atoi (argv[++i]);

      runs = MAX (1, value);
    } else {
      g_printerr ("usage: %s --weights MODEL.safetensors --calibration "
          "CALIB.json [--rgb DIR] [--runs N]\n", argv[0]);
      return 2;
    }
  }
  if (weights_path == NULL || calib_path == NULL) {
    g_printerr ("--weights and --calibration are needed\n");
    return 2;
  }
  weights = p3d_weights_open (weights_path, &error);
  model = weights ? p3d_model_new (weights, &error) : NULL;
  if (model == NULL || model->cameras == NULL) {
    g_printerr ("%s\n", error ? error->message : "not a camera model");
    return 1;
  }
  p3d_weights_free (weights);
  calib = p3d_calibration_load (calib_path, &error);
  if (calib == NULL || calib->n_cameras != model->cameras->n_cameras) {
    g_printerr ("%s\n", calib == NULL ? error->message : "the calibration "
        "has another number of cameras than the model");
    return 1;
  }
  if (p3dc_cuda_device_count () == 0) {
    g_printerr ("no CUDA device\n");
    return 1;
  }
  P3D_BENCH_CHECK (p3dc_cuda_stream_create (&stream));

  for (precision = 0; precision < 2; precision++) {
    Chain chain;
    guint32 count = 0;

    chain_init (&chain, model, calib, precision == 0, rgb_dir, stream);
    for (s = 0; s < G_N_ELEMENTS (steps); s++)
      P3D_BENCH_CHECK (p3d_bench_gpu (steps[s].func, &chain, stream, WARMUP,
              runs, &stats[precision][s]));
    P3D_BENCH_CHECK (step_chain (&chain, stream));
    P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (&count, chain.boxes.count, 4,
            stream));
    P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
    kept[precision] = count;
    chain_clear (&chain);
  }

  printf ("BEVDet (%s), %u cameras of %u x %u to %u x %u, the BEV grid "
      "%g m; the whole chain keeps %u boxes (F16), %u (F32)\n\n",
      weights_path, model->cameras->n_cameras, model->cameras->src_width,
      model->cameras->src_height, model->cameras->input_width,
      model->cameras->input_height, model->cameras->xbound[2], kept[0],
      kept[1]);
  for (precision = 0; precision < 2; precision++) {
    printf ("%s storage, GPU time per frame in us, median (p10-p90) of %u "
        "runs\n\n", precision == 0 ? "F16" : "F32", runs);
    printf ("| step | median | p10 | p90 |\n| --- | ---: | ---: | ---: |\n");
    for (s = 0; s < G_N_ELEMENTS (steps); s++)
      p3d_bench_print_row (steps[s].name, &stats[precision][s]);
    printf ("\n");
  }
  p3d_calibration_free (calib);
  p3d_model_free (model);
  P3D_BENCH_CHECK (p3dc_cuda_stream_destroy (stream));
  return 0;
}
