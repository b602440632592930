/* The CUDA nms against the reference: the same count, the same kept indices
 * in the same order, the same output bytes (zeros and -1 after the kept
 * ones), on the special cases of nms.c, on random layouts of every mode up
 * to 10,000 boxes and at the largest capacity, on extreme layouts (every
 * box the same, every box apart, a dense cluster) and on layouts that strain
 * the grid of the larger calls, with a count on the device
 * below the capacity and above it (clamped), with one workspace reused
 * across modes, parameters and buffers (its CUDA graphs), inside a
 * caller's stream capture and beside another stream's global capture. */
#include <math.h>
#include <string.h>
#include <gst/check/gstcheck.h>

#include "nms-private.h"
#include "p3dtest-capture.h"
#include "p3dtest-nmscases.h"
#include "p3dtest.h"

static P3dcCudaStream stream;

static void
setup (void)
{
  fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
}

static void
teardown (void)
{
  /* a test that failed before it lifted its limit leaves none to the next */
  p3dc_nms_limit_shared_memory (0);
  fail_unless_equals_int (p3dc_cuda_stream_destroy (stream), P3DC_OK);
}

/* Whether this GPU's nms takes workspaces of @capacity boxes: fewer than
 * P3DC_NMS_MAX_CAPACITY on GPUs with less shared memory a block than
 * Hopper's (p3dc_nms_device_capacity).  The cases of more are skipped,
 * saying so. */
static gboolean
device_takes (guint capacity, const gchar * test)
{
  guint32 most = 0;

  fail_unless_equals_int (p3dc_nms_device_capacity (&most), P3DC_OK);
  if (capacity <= most)
    return TRUE;
  g_print ("%s, %u boxes: skipped, this GPU's nms takes at most %u\n", test,
      capacity, most);
  return FALSE;
}

/* The major compute capability of the GPU the tests run on. */
static gint
device_major (void)
{
  gint major = 0, minor = 0, multiprocessors = 0;
  gchar name[128];

  fail_unless_equals_int (p3dc_cuda_device_describe (0, name, sizeof (name),
          &major, &minor, &multiprocessors), P3DC_OK);
  return major;
}

static gpointer
device_copy (gconstpointer host, gsize size)
{
  gpointer device = NULL;

  fail_unless_equals_int (p3dc_cuda_malloc (&device, MAX (size, 4)), P3DC_OK);
  if (size > 0)
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (device, host, size,
            stream), P3DC_OK);
  return device;
}

static gpointer
device_garbage (gsize size)
{
  gpointer device = NULL;

  fail_unless_equals_int (p3dc_cuda_malloc (&device, MAX (size, 4)), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (device, 0xab, MAX (size, 4),
          stream), P3DC_OK);
  return device;
}

/* What a box carries beside its record (a velocity: two words) follows the
 * kept boxes on both paths: the device gather from the device indices
 * equals the reference's from the reference's, bit for bit, and each
 * entry is its box's payload (zeros past the kept ones). */
static void
compare_gather (const gchar * what, gconstpointer d_index,
    const gint32 * want_index, guint n, guint out_capacity)
{
  gsize in_size = (gsize) MAX (n, 1) * 8, out_size = (gsize) MAX
      (out_capacity, 1) * 8;
  guint32 *payload = g_malloc (in_size);
  guint32 *want = g_malloc0 (out_size), *got = g_malloc0 (out_size);
  gpointer d_payload, d_out;
  guint i;

  for (i = 0; i < 2 * MAX (n, 1); i++)
    payload[i] = 0x10000u + i;
  fail_unless_equals_int (p3dc_nms_gather_cpu (want_index, out_capacity,
          payload, 2, want), P3DC_OK);
  d_payload = device_copy (payload, in_size);
  d_out = device_garbage (out_size);
  fail_unless_equals_int (p3dc_nms_gather_cuda (d_index, out_capacity,
          d_payload, 2, d_out, stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (got, d_out, out_size,
          stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
  for (i = 0; i < out_capacity; i++) {
    guint32 expect = want_index[i] < 0 ? 0 : 0x10000u + 2 * want_index[i];

    fail_unless (want[2 * i] == expect && want[2 * i + 1] == (expect ?
            expect + 1 : 0), "%s: reference payload %u", what, i);
    fail_unless (got[2 * i] == want[2 * i] && got[2 * i + 1] ==
        want[2 * i + 1], "%s: CUDA payload %u: %x %x, reference %x %x",
        what, i, got[2 * i], got[2 * i + 1], want[2 * i], want[2 * i + 1]);
  }
  fail_unless_equals_int (p3dc_cuda_free (d_payload), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_free (d_out), P3DC_OK);
  g_free (payload);
  g_free (want);
  g_free (got);
}

/* The device buffers of one call: the boxes (the workspace's capacity of
 * records at least), their count, the output, its count and the kept
 * indices (NULL: the call asks for none). */
typedef struct
{
  gpointer boxes, count, out, out_count, index;
} CallBuffers;

/* One p3dc_nms_cuda() call on @b, for p3d_capture_and_launch(). */
typedef struct
{
  P3dcNms *nms;
  const P3dcNmsParams *params;
  const CallBuffers *b;
  guint out_capacity;
} QueuedCall;

static P3dcResult
queue_call (void *user_data, P3dcCudaStream s)
{
  const QueuedCall *q = user_data;

  return p3dc_nms_cuda (q->nms, q->params, q->b->boxes, q->b->count,
      q->b->out, q->out_capacity, q->b->out_count, q->b->index, s);
}

/* How compare_in() makes the CUDA call: on the stream; queued while the
 * test captures the stream (it runs as that capture's graph); or on the
 * stream while another stream is captured in the global mode, which the
 * call must leave intact. */
typedef enum
{
  CALL_DIRECT,
  CALL_CAPTURED,
  CALL_BESIDE_GLOBAL_CAPTURE
} CallWay;

/* Runs both paths on @boxes (@n records on the host; the device count is
 * @device_count, which the CUDA path clamps to its capacity, so the
 * reference gets min (device_count, capacity) of them) and compares.  The
 * CUDA path runs on @b's buffers, whose inputs are uploaded and whose
 * outputs are filled with garbage first, the way @way says. */
static void
compare_in (const gchar * what, P3dcNms * nms, const P3dcNmsParams * params,
    gconstpointer boxes, guint n, guint device_count, guint out_capacity,
    const CallBuffers * b, CallWay way)
{
  gsize record_size = p3dc_nms_record_size (params->mode);
  guint used = MIN (device_count, p3dc_nms_get_capacity (nms));
  gsize out_size = (gsize) out_capacity * record_size;
  guint8 *want_out = g_malloc0 (MAX (out_size, 1));
  guint8 *got_out = g_malloc0 (MAX (out_size, 1));
  gint32 *want_index = g_new0 (gint32, MAX (out_capacity, 1));
  gint32 *got_index = g_new0 (gint32, MAX (out_capacity, 1));
  guint32 want_count = 0, got_count = 0, i;
  gboolean with_index = b->index != NULL;

  fail_unless (used <= n, "%s: the test gives too few boxes", what);
  fail_unless_equals_int (p3dc_nms_cpu (params, boxes, used, want_out,
          out_capacity, &want_count, want_index), P3DC_OK);

  if (n > 0)
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (b->boxes, boxes,
            (gsize) n * record_size, stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_htod (b->count, &device_count,
          sizeof (guint32), stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (b->out, 0xab, MAX (out_size, 4),
          stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (b->out_count, 0xab, 4, stream),
      P3DC_OK);
  if (with_index)
    fail_unless_equals_int (p3dc_cuda_memset (b->index, 0xab,
            MAX (out_capacity, 1) * sizeof (gint32), stream), P3DC_OK);

  if (way == CALL_CAPTURED) {
    QueuedCall q = { nms, params, b, out_capacity };
    gsize nodes = 0;

    fail_unless_equals_int (p3d_capture_and_launch (stream, queue_call, &q,
            &nodes), P3DC_OK);
    /* one kernel up to 512 boxes (nms_small.cuh), three or more above */
    if (p3dc_nms_get_capacity (nms) <= 512)
      fail_unless (nodes == 1, "%s: the capture holds %" G_GSIZE_FORMAT
          " nodes", what, nodes);
    else
      fail_unless (nodes >= 3, "%s: the capture holds %" G_GSIZE_FORMAT
          " nodes", what, nodes);
  } else if (way == CALL_BESIDE_GLOBAL_CAPTURE) {
    QueuedCall q = { nms, params, b, out_capacity };
    P3dcCudaStream capturing = NULL;

    fail_unless_equals_int (p3dc_cuda_stream_create (&capturing), P3DC_OK);
    fail_unless_equals_int (p3d_call_beside_global_capture (capturing,
            queue_call, &q, stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_stream_destroy (capturing), P3DC_OK);
  } else {
    fail_unless_equals_int (p3dc_nms_cuda (nms, params, b->boxes, b->count,
            b->out, out_capacity, b->out_count, b->index, stream), P3DC_OK);
  }
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (&got_count, b->out_count,
          sizeof (guint32), stream), P3DC_OK);
  if (out_size > 0)
    fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (got_out, b->out,
            out_size, stream), P3DC_OK);
  if (with_index && out_capacity > 0)
    fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (got_index, b->index,
            out_capacity * sizeof (gint32), stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);

  fail_unless (got_count == want_count, "%s, workspace of %u: CUDA keeps "
      "%u boxes, the reference %u", what, p3dc_nms_get_capacity (nms),
      got_count, want_count);
  for (i = 0; with_index && i < out_capacity; i++)
    fail_unless (got_index[i] == want_index[i], "%s: kept index %u: "
        "CUDA %d, reference %d", what, i, got_index[i], want_index[i]);
  if (with_index)
    compare_gather (what, b->index, want_index, n, out_capacity);
  for (i = 0; i < out_capacity; i++)
    fail_unless (memcmp (got_out + i * record_size, want_out + i *
            record_size, record_size) == 0, "%s: output record %u "
        "differs", what, i);

  g_free (want_out);
  g_free (got_out);
  g_free (want_index);
  g_free (got_index);
}

/* Buffers for calls of up to @n records in and @out_capacity out, of any
 * mode, kept indices with @with_index. */
static void
call_buffers_alloc (CallBuffers * b, guint n, guint out_capacity,
    gboolean with_index)
{
  gsize record_size = sizeof (P3dcBox3d);

  b->boxes = device_garbage ((gsize) n * record_size);
  b->count = device_garbage (sizeof (guint32));
  b->out = device_garbage ((gsize) out_capacity * record_size);
  b->out_count = device_garbage (sizeof (guint32));
  b->index = with_index ? device_garbage (MAX (out_capacity, 1) *
      sizeof (gint32)) : NULL;
}

static void
call_buffers_free (CallBuffers * b)
{
  fail_unless_equals_int (p3dc_cuda_free (b->boxes), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_free (b->count), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_free (b->out), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_free (b->out_count), P3DC_OK);
  if (b->index != NULL)
    fail_unless_equals_int (p3dc_cuda_free (b->index), P3DC_OK);
}

/* compare_in() on buffers of its own. */
static void
compare (const gchar * what, P3dcNms * nms, const P3dcNmsParams * params,
    gconstpointer boxes, guint n, guint device_count, guint out_capacity,
    gboolean with_index)
{
  CallBuffers b;

  call_buffers_alloc (&b, n, out_capacity, with_index);
  compare_in (what, nms, params, boxes, n, device_count, out_capacity, &b,
      CALL_DIRECT);
  call_buffers_free (&b);
}

/* A full workspace of the extreme layouts and of the reused workspace
 * tests: 16 tiles, 4 of the reduction's 256-box chunks. */
#define FULL_CAPACITY 1024

/* compare() with every box counted, on a workspace of exactly @n (one
 * kernel up to 512 boxes, nms_small.cuh; ranked by rank_kernel up to 4096)
 * and on one above 4096 (sorted by chunks, nms_chunk_sort.cuh). */
static void
compare_simple (const gchar * what, const P3dcNmsParams * params,
    gconstpointer boxes, guint n)
{
  P3dcNms *nms = NULL;

  fail_unless_equals_int (p3dc_nms_new (MAX (n, 1), &nms), P3DC_OK);
  compare (what, nms, params, boxes, n, n, n, TRUE);
  p3dc_nms_free (nms);
  if (n <= 4096) {
    fail_unless_equals_int (p3dc_nms_new (4097, &nms), P3DC_OK);
    compare (what, nms, params, boxes, n, n, n, TRUE);
    p3dc_nms_free (nms);
  }
}

/* @n random boxes of @mode's record type, of the kind the variant asks. */
static gpointer
random_boxes (P3dTestRng * rng, P3dcNmsMode mode, guint n, guint variant,
    gfloat extent)
{
  gsize record_size = p3dc_nms_record_size (mode);
  gpointer boxes = g_malloc (MAX (n, 1) * record_size);

  if (mode == P3DC_NMS_IOU)
    nms_cases_objects2d (rng, boxes, n, 20 * extent, 15 * extent,
        1 + p3d_test_rng_below (rng, 8), 1 + p3d_test_rng_below (rng, 10));
  else
    nms_cases_objects3d (rng, boxes, n, extent, 1 + p3d_test_rng_below (rng,
            8), 1 + p3d_test_rng_below (rng, 10));
  switch (variant) {
    case 1:
      nms_cases_tie_scores (rng, (guint8 *) boxes + record_size - 8,
          record_size, n);
      break;
    case 2:
      if (mode == P3DC_NMS_IOU) {
        nms_cases_spoil2d (rng, boxes, n, 5);
        nms_cases_flatten2d (rng, boxes, n, 5);
      } else {
        nms_cases_spoil3d (rng, boxes, n, 5);
        nms_cases_flatten3d (rng, boxes, n, 5);
      }
      break;
    case 3:
      nms_cases_duplicate (rng, boxes, record_size, n, 4,
          p3d_test_rng_below (rng, 2));
      break;
    default:
      break;
  }
  return boxes;
}

GST_START_TEST (test_errors)
{
  P3dcNms *nms = (P3dcNms *) 0x1;
  P3dcNmsParams p;
  gpointer d = device_garbage (64);

  fail_unless_equals_int (p3dc_nms_new (0, &nms), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (nms == NULL);
  fail_unless_equals_int (p3dc_nms_new (P3DC_NMS_MAX_CAPACITY + 1, &nms),
      P3DC_ERROR_TOO_LARGE);
  fail_unless_equals_int (p3dc_nms_new (16, NULL), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_nms_new (16, &nms), P3DC_OK);
  fail_unless_equals_int (p3dc_nms_get_capacity (nms), 16);
  nms_cases_params (&p, P3DC_NMS_IOU, NAN);
  fail_unless_equals_int (p3dc_nms_cuda (nms, &p, d, d, d, 1, d, NULL,
          stream), P3DC_ERROR_INVALID_ARGUMENT);
  nms_cases_params (&p, P3DC_NMS_IOU, 0.5f);
  fail_unless_equals_int (p3dc_nms_cuda (nms, &p, NULL, d, d, 1, d, NULL,
          stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_nms_cuda (nms, &p, d, NULL, d, 1, d, NULL,
          stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_nms_cuda (nms, &p, d, d, d, 1, NULL, NULL,
          stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_nms_cuda (nms, &p, (guint8 *) d + 2, d, d, 1,
          d, NULL, stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_nms_cuda (NULL, &p, d, d, d, 1, d, NULL,
          stream), P3DC_ERROR_INVALID_ARGUMENT);
  p3dc_nms_free (nms);
  p3dc_nms_free (NULL);
  fail_unless_equals_int (p3dc_cuda_free (d), P3DC_OK);
}

GST_END_TEST;

GST_START_TEST (test_threshold_pairs)
{
  P3dcBox2d iou[2] = { {0, 0, 10, 10, 0.9f, 0}, {0, 0, 10, 20, 0.8f, 0}
  };
  P3dcBox2d iou1[2] = { {0, 0, 9, 9, 0.9f, 0}, {0, 0, 9, 19, 0.8f, 0}
  };
  P3dcBox3d bev[2] = { {0, 0, 0, 4, 2, 1, 1.0f, 0.9f, 0},
  {0, 1, 0, 4, 4, 1, 1.0f, 0.8f, 0}
  };
  P3dcBox3d rot[2] = { {0, 0, 0, 4, 2, 1, 0, 0.9f, 0},
  {0, 1, 0, 4, 4, 1, 0, 0.8f, 0}
  };
  P3dcBox3d turned[2] = { {0, 0, 0, 4, 2, 1, 0.7f, 0.9f, 0},
  {0, 0, 0, 4, 4, 1, 0.7f, 0.8f, 0}
  };
  P3dcBox3d circle[2] = { {0, 0, 0, 1, 1, 1, 0, 0.9f, 0},
  {3, 4, 0, 1, 1, 1, 0, 0.8f, 0}
  };
  const float deltas[] = { 0.0f, -1e-6f, 1e-6f, -1e-7f, 1e-7f };
  P3dcNmsParams p;
  guint i;

  turned[1].x = (float) -sin (0.7);
  turned[1].y = (float) cos (0.7);
  for (i = 0; i < G_N_ELEMENTS (deltas); i++) {
    nms_cases_params (&p, P3DC_NMS_IOU, 0.5f + deltas[i]);
    compare_simple ("iou pair", &p, iou, 2);
    p.offset = 1.0f;
    compare_simple ("iou +1 pair", &p, iou1, 2);
    nms_cases_params (&p, P3DC_NMS_BEV_ALIGNED, 0.5f + deltas[i]);
    compare_simple ("bev-aligned pair", &p, bev, 2);
    nms_cases_params (&p, P3DC_NMS_BEV_ROTATED, 0.5f + deltas[i]);
    compare_simple ("bev-rotated pair", &p, rot, 2);
    compare_simple ("bev-rotated turned pair", &p, turned, 2);
    nms_cases_params (&p, P3DC_NMS_CIRCLE, 5.0f + deltas[i]);
    compare_simple ("circle pair", &p, circle, 2);
  }
  /* mmcv's rule on the pairs where it and the exact rule disagree, at
   * thresholds between, around and above their IoUs (p3dtest-nmscases.h) */
  {
    const float thresholds[] = { 0.0f, 0.001f, 0.0013f, 0.1423f, 0.1427f,
      0.143f, (float) NMS_CASES_MMCV_POKE_IOU
    };
    P3dcBox3d pair[2];

    for (i = 0; i < G_N_ELEMENTS (thresholds); i++) {
      guint rule, k;

      for (rule = 0; rule < 2; rule++) {
        nms_cases_params (&p, P3DC_NMS_BEV_ROTATED, thresholds[i]);
        p.iou_rule = rule;
        compare_simple ("gap pair", &p, nms_cases_mmcv_gap, 2);
        compare_simple ("poke pair", &p, nms_cases_mmcv_poke, 2);
        for (k = 0; k < 3; k++) {
          nms_cases_turn_pair (nms_cases_mmcv_poke, 0.5f + k, pair);
          compare_simple ("poke pair, turned", &p, pair, 2);
          nms_cases_turn_pair (nms_cases_mmcv_gap, 0.5f + k, pair);
          compare_simple ("gap pair, turned", &p, pair, 2);
        }
      }
    }
  }
}

GST_END_TEST;

/* one kernel (nms_small.cuh), ranked by rank_kernel, sorted by the
 * device-wide sort */
static const guint workspace_sizes[] = { 16, 600, 5000 };

GST_START_TEST (test_special_cases)
{
  P3dcBox3d boxes3d[12] = {
    {NAN, 0, 0, 4, 2, 1, 0, 0.99f, 0},
    {0, 0, 0, 4, 2, 1, 0, NAN, 0},
    {0, INFINITY, 0, 4, 2, 1, 0, 0.98f, 0},
    {0, 0, 0, -4, 2, 1, 0, 0.96f, 0},
    {0, 0, 0, 0, 2, 1, 0, 0.95f, 0},
    {0, 0, 0, 0, 0, 1, 0, 0.94f, 1},
    {0.2f, 0, 0, 4, 2, 1, 0, 0.5f, 0},
    {0, 0, 0, 4, 2, 1, 0, 0.5f, 0},
    {0, 0, 0, 4, 2, 1, 0, -0.0f, 1},
    {0, 0, 0, 4, 2, 1, 0, 0.0f, 1},
    {0.2f, 0, 0, 4, 2, 1, 0, 0.5f, 0},
    {30, 0, 0, 4, 2, 1, 0, 0.3f, 0},
  };
  P3dcBox2d boxes2d[8] = {
    {NAN, 0, 10, 10, 0.99f, 0},
    {0, 0, 10, 10, NAN, 0},
    {5, 0, 4, 10, 0.97f, 0},
    {5, 5, 5, 9, 0.96f, 0},
    {0, 0, 10, 10, 0.5f, 0},
    {0, 0, 10, 10, 0.5f, 0},
    {1, 0, 11, 10, -0.0f, 1},
    {100, 0, 110, 10, 0.0f, 1},
  };
  P3dcBox3d one = { 1, 2, 3, 4, 5, 6, 7, 0.5f, 9 };
  P3dcNmsParams p;
  P3dcNms *nms = NULL;
  guint m, per_class, cap;

  fail_unless_equals_int (p3dc_nms_new (workspace_sizes[__i__], &nms), P3DC_OK);
  for (m = P3DC_NMS_IOU; m <= P3DC_NMS_CIRCLE; m++) {
    gconstpointer boxes = m == P3DC_NMS_IOU ? (gconstpointer) boxes2d :
        (gconstpointer) boxes3d;
    guint n = m == P3DC_NMS_IOU ? G_N_ELEMENTS (boxes2d) :
        G_N_ELEMENTS (boxes3d);

    for (per_class = 0; per_class < 2; per_class++) {
      nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.0f : 0.3f);
      p.per_class = per_class;
      compare ("special", nms, &p, boxes, n, n, n, TRUE);
      compare ("special, small output", nms, &p, boxes, n, n, 2, TRUE);
      compare ("special, no index", nms, &p, boxes, n, n, n, FALSE);
      if (m == P3DC_NMS_IOU) {
        p.offset = 1.0f;
        compare ("special, +1", nms, &p, boxes, n, n, n, TRUE);
      } else {
        compare ("one box", nms, &p, &one, 1, 1, 3, TRUE);
      }
      /* no boxes at all, and no output room */
      compare ("empty", nms, &p, boxes, n, 0, 5, TRUE);
      /* huge but finite boxes (nms.h); bev-rotated under both rules */
      if (m == P3DC_NMS_IOU) {
        compare ("huge", nms, &p, nms_cases_huge2d,
            G_N_ELEMENTS (nms_cases_huge2d), G_N_ELEMENTS (nms_cases_huge2d),
            5, TRUE);
      } else {
        compare ("huge", nms, &p, nms_cases_huge3d,
            G_N_ELEMENTS (nms_cases_huge3d), G_N_ELEMENTS (nms_cases_huge3d),
            8, TRUE);
        p.iou_rule = P3DC_NMS_IOU_RULE_MMCV;
        compare ("huge, mmcv", nms, &p, nms_cases_huge3d,
            G_N_ELEMENTS (nms_cases_huge3d), G_N_ELEMENTS (nms_cases_huge3d),
            8, TRUE);
        compare ("special, mmcv", nms, &p, boxes, n, n, n, TRUE);
        p.iou_rule = P3DC_NMS_IOU_RULE_EXACT;
      }
      compare ("no output", nms, &p, boxes, n, n, 0, TRUE);
      for (cap = 1; cap < 4; cap++) {
        p.pre_max = cap;
        p.post_max = 0;
        compare ("pre_max", nms, &p, boxes, n, n, n, TRUE);
        p.pre_max = 0;
        p.post_max = cap;
        compare ("post_max", nms, &p, boxes, n, n, n, TRUE);
      }
    }
  }
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* Every mode and variant on sizes around the 32-box halves and 64-box
 * tiles, the reduction's 256-box chunks (workspaces of more than 512
 * boxes), and 1024 boxes. */
GST_START_TEST (test_random_small)
{
  /* around the tiles and the reduction's 256-box chunks */
  const guint sizes[] = { 1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255,
    256, 257, 500, 513, 1000, 1023, FULL_CAPACITY, FULL_CAPACITY + 1
  };
  const float thresholds[] = { 0.01f, 0.1f, 0.5f, 0.8f };
  P3dTestRng rng;
  guint m, s, variant;

  p3d_test_rng_init (&rng, 21);
  for (m = P3DC_NMS_IOU; m <= P3DC_NMS_CIRCLE; m++) {
    for (s = 0; s < G_N_ELEMENTS (sizes); s++) {
      for (variant = 0; variant < 6; variant++) {
        guint n = sizes[s];
        gpointer boxes = random_boxes (&rng, m, n, variant % 4,
            p3d_test_rng_uniform (&rng, 5, 70));
        P3dcNmsParams p;
        gchar *what;

        nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ?
            p3d_test_rng_uniform (&rng, 0.2f, 4.0f) :
            thresholds[p3d_test_rng_below (&rng, 4)]);
        p.per_class = variant >= 4;
        if (m == P3DC_NMS_IOU)
          p.offset = (gfloat) (variant & 1);
        /* bev-rotated: every other set under mmcv's rule */
        p.iou_rule = (P3dcNmsIouRule) (variant & 1);
        if (variant == 5) {
          p.pre_max = 1 + p3d_test_rng_below (&rng, n);
          p.post_max = 1 + p3d_test_rng_below (&rng, n);
          p.score_threshold = 0.3f;
        }
        what = g_strdup_printf ("mode %u, n %u, variant %u", m, n, variant);
        compare_simple (what, &p, boxes, n);
        g_free (what);
        g_free (boxes);
      }
    }
  }
}

GST_END_TEST;

/* 10,000-box scenes of every mode, per class or not, dense and sparse. */
GST_START_TEST (test_large)
{
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  guint n = 10000, m, per_class, round;

  if (!device_takes (n, "test_large"))
    return;
  p3d_test_rng_init (&rng, 22);
  fail_unless_equals_int (p3dc_nms_new (n, &nms), P3DC_OK);
  for (m = P3DC_NMS_IOU; m <= P3DC_NMS_CIRCLE; m++) {
    for (per_class = 0; per_class < 2; per_class++) {
      for (round = 0; round < 2; round++) {
        gpointer boxes = random_boxes (&rng, m, n, round * 2,
            round ? 70.0f : 20.0f);
        P3dcNmsParams p;
        gchar *what = g_strdup_printf ("large, mode %u, per class %u, "
            "round %u", m, per_class, round);

        nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.5f : 0.2f);
        p.per_class = per_class;
        compare (what, nms, &p, boxes, n, n, n, TRUE);
        /* few boxes counted in a large workspace */
        compare (what, nms, &p, boxes, n, 1 + 700 * round, 800, TRUE);
        if (m == P3DC_NMS_BEV_ROTATED) {
          p.iou_rule = P3DC_NMS_IOU_RULE_MMCV;
          compare (what, nms, &p, boxes, n, n, n, TRUE);
        }
        g_free (what);
        g_free (boxes);
      }
    }
  }
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* The workspaces of test_count_and_reuse: one whose calls are one kernel
 * (nms_small.cuh), two sorted by rank_kernel. */
static const guint reuse_capacities[] = { 512, FULL_CAPACITY, 4096 };

/* A count tensor below the capacity, and above it (clamped); and one
 * workspace reused across modes and parameters, as an element would. */
GST_START_TEST (test_count_and_reuse)
{
  const guint counts[] = { 0, 1, 64, 777, 1023, 1024, 1025, 4095, 4096, 5000,
    100000
  };
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  guint capacity = reuse_capacities[__i__], i, m;

  p3d_test_rng_init (&rng, 23 + __i__);
  fail_unless_equals_int (p3dc_nms_new (capacity, &nms), P3DC_OK);
  for (i = 0; i < G_N_ELEMENTS (counts); i++) {
    for (m = P3DC_NMS_IOU; m <= P3DC_NMS_CIRCLE; m++) {
      gpointer boxes = random_boxes (&rng, m, capacity, i % 4, 40.0f);
      P3dcNmsParams p;
      gchar *what = g_strdup_printf ("count %u of capacity %u, mode %u",
          counts[i], capacity, m);

      nms_cases_params (&p, m,
          m == P3DC_NMS_CIRCLE ? 1.0f : 0.1f * (1 + i % 5));
      p.per_class = i & 1;
      compare (what, nms, &p, boxes, capacity, counts[i], 300, TRUE);
      g_free (what);
      g_free (boxes);
    }
  }
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* The mode of the @k-th of a workspace's five graphs in turn (one for
 * each mask kernel: the four modes, then bev-rotated under mmcv's rule),
 * and its rule in *@rule. */
static P3dcNmsMode
graph_mode (guint k, P3dcNmsIouRule * rule)
{
  *rule = k % 5 == 4 ? P3DC_NMS_IOU_RULE_MMCV : P3DC_NMS_IOU_RULE_EXACT;
  return k % 5 == 4 ? P3DC_NMS_BEV_ROTATED : (P3dcNmsMode) (k % 5);
}

/* A workspace of up to 32768 boxes launches one CUDA graph a call (one for
 * each mask kernel, built by the first call that takes it: of one kernel at
 * 400 boxes, three at 700, six to ten at 6000, which sorts by chunks and
 * finds bev-aligned's and circle's pairs through the grid) and sets its
 * nodes again only where a call's arguments changed.  One workspace, two
 * sets of buffers taken in turns of their own, every mode and both of
 * bev-rotated's rules in turn, the count, the output's capacity, the
 * thresholds, pre_max and post_max and the kept indices changed between
 * calls; each call is made twice, the second time with new boxes in the
 * same buffers and every argument the same, so that it runs the graph as
 * the first call left it. */
static const guint graph_capacities[] = { 700, 400, 6000 };

GST_START_TEST (test_graph_reuse)
{
  const guint capacity = graph_capacities[__i__];
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  CallBuffers sets[2];
  guint round;

  p3d_test_rng_init (&rng, 25);
  fail_unless_equals_int (p3dc_nms_new (capacity, &nms), P3DC_OK);
  call_buffers_alloc (&sets[0], capacity, capacity, TRUE);
  call_buffers_alloc (&sets[1], capacity, capacity, TRUE);
  for (round = 0; round < 40; round++) {
    P3dcNmsIouRule rule;
    P3dcNmsMode m = graph_mode (round, &rule);
    CallBuffers b = sets[(round / 3) % 2];
    guint count = p3d_test_rng_below (&rng, capacity + 100);
    guint out_capacity = 1 + p3d_test_rng_below (&rng, capacity);
    P3dcNmsParams p;
    guint again;

    nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ?
        p3d_test_rng_uniform (&rng, 0.2f, 3.0f) :
        p3d_test_rng_uniform (&rng, 0.05f, 0.7f));
    p.iou_rule = rule;
    p.per_class = p3d_test_rng_below (&rng, 2);
    if (round % 4 == 3) {
      p.pre_max = 1 + p3d_test_rng_below (&rng, capacity);
      p.post_max = 1 + p3d_test_rng_below (&rng, capacity);
    }
    if (round % 7 == 6)
      b.index = NULL;
    for (again = 0; again < 2; again++) {
      gpointer boxes = random_boxes (&rng, m, capacity, round % 4,
          p3d_test_rng_uniform (&rng, 10, 50));
      gchar *what = g_strdup_printf ("round %u, call %u: mode %u, rule %u, "
          "count %u, out capacity %u, buffers %u", round, again, m,
          p.iou_rule, count, out_capacity, (round / 3) % 2);

      compare_in (what, nms, &p, boxes, capacity, count, out_capacity, &b,
          CALL_DIRECT);
      g_free (what);
      g_free (boxes);
    }
  }
  /* every call ran a graph: one a mode, and bev-rotated's under mmcv's
   * rule */
  fail_unless_equals_int (p3dc_nms_graphs_built (nms), 5);
  call_buffers_free (&sets[0]);
  call_buffers_free (&sets[1]);
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* Calls on @capacity's workspace in the sets of buffers @turns names
 * (@n_calls of them, sets 0 .. @n_sets - 1), each compared with the
 * reference, and the nodes each sets again checked against @expected; where
 * @one_form, no second executable form can be made (a test hook makes the
 * instantiation fail). */
static void
check_node_sets (guint capacity, gboolean one_form, const guint * turns,
    const guint * expected, guint n_calls, guint n_sets)
{
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  CallBuffers *sets = g_new0 (CallBuffers, n_sets);
  P3dcNmsParams p;
  guint call, s;
  guint64 sets_before = 0;

  p3d_test_rng_init (&rng, one_form ? 30 : 28);
  fail_unless_equals_int (p3dc_nms_new (capacity, &nms), P3DC_OK);
  if (one_form)
    p3dc_nms_refuse_graph_forms (nms);
  for (s = 0; s < n_sets; s++)
    call_buffers_alloc (&sets[s], capacity, capacity, TRUE);
  nms_cases_params (&p, P3DC_NMS_BEV_ROTATED, 0.3f);
  for (call = 0; call < n_calls; call++) {
    gpointer boxes = random_boxes (&rng, P3DC_NMS_BEV_ROTATED, capacity,
        call % 4, 30.0f);
    gchar *what = g_strdup_printf ("call %u, buffers %u%s", call, turns[call],
        one_form ? ", one form" : "");
    guint64 sets_after, set_now;

    compare_in (what, nms, &p, boxes, capacity, capacity - call, capacity,
        &sets[turns[call]], CALL_DIRECT);
    sets_after = p3dc_nms_graph_node_sets (nms);
    set_now = sets_after - sets_before;
    fail_unless (set_now == expected[call],
        "%s: %" G_GUINT64_FORMAT " nodes set again, expected %u", what,
        set_now, expected[call]);
    sets_before = sets_after;
    g_free (what);
    g_free (boxes);
  }
  fail_unless_equals_int (p3dc_nms_graphs_built (nms), 1);
  for (s = 0; s < n_sets; s++)
    call_buffers_free (&sets[s]);
  g_free (sets);
  p3dc_nms_free (nms);
}

/* Where only the buffers change from call to call, as in the element,
 * whose pools hand out their buffers in turn, a call launches the
 * executable form of its graph that holds its buffers, and sets no node;
 * where none does, it sets one node of a form, the first kernel's: the
 * later kernels read the call's buffers from the workspace, where the first
 * publishes them (a workspace of up to 512 boxes has one kernel).  Five
 * sets of buffers, one more than the forms: a set not seen before makes a
 * form while there are fewer than four, then takes the one launched
 * longest ago. */
GST_START_TEST (test_buffers_set_one_node)
{
  /* the sets in turn, and the nodes each call sets, worked out for four
   * forms: call 0 builds the graph and its first form (set 0); sets 1, 2
   * and 3 make the other three; set 4 (call 11) takes form 0, launched
   * last at call 7; set 0 (call 12) then takes set 2's form (call 8); sets
   * 1 and 4 are held */
  const guint turns[] = { 0, 1, 0, 2, 2, 1, 0, 0, 2, 1, 3, 4, 0, 1, 4 };
  const guint expected[] = { 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0 };

  G_STATIC_ASSERT (G_N_ELEMENTS (turns) == G_N_ELEMENTS (expected));
  fail_unless_equals_int (p3dc_nms_graph_forms (), 4);
  check_node_sets (graph_capacities[__i__], FALSE, turns, expected,
      G_N_ELEMENTS (turns), 5);
}

GST_END_TEST;

/* Where no second executable form can be made, the graph's one form serves
 * every call: a call in other buffers than the call before sets one node,
 * one in the same buffers none, and every result is the reference's. */
GST_START_TEST (test_buffers_one_form)
{
  const guint turns[] = { 0, 1, 0, 2, 2, 1, 0, 0, 2, 1 };
  const guint expected[] = { 0, 1, 1, 1, 0, 1, 1, 0, 1, 1 };

  G_STATIC_ASSERT (G_N_ELEMENTS (turns) == G_N_ELEMENTS (expected));
  check_node_sets (graph_capacities[__i__], TRUE, turns, expected,
      G_N_ELEMENTS (turns), 3);
}

GST_END_TEST;

/* Where a graph cannot be built (a driver that takes none; here a test
 * hook makes every build fail), the call that tried and every later call
 * launch their kernels one by one, with the same results: on a fresh
 * workspace (of three kernels a call, of one, and of a sort by chunks),
 * every mode and both of bev-rotated's rules, twice each, the buffers
 * changing between calls. */
GST_START_TEST (test_graph_build_refused)
{
  const guint capacity = graph_capacities[__i__];
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  CallBuffers sets[2];
  guint call;

  p3d_test_rng_init (&rng, 29);
  fail_unless_equals_int (p3dc_nms_new (capacity, &nms), P3DC_OK);
  p3dc_nms_refuse_graph_builds (nms);
  call_buffers_alloc (&sets[0], capacity, capacity, TRUE);
  call_buffers_alloc (&sets[1], capacity, capacity, TRUE);
  for (call = 0; call < 10; call++) {
    P3dcNmsIouRule rule;
    P3dcNmsMode m = graph_mode (call, &rule);
    gpointer boxes = random_boxes (&rng, m, capacity, call % 4, 30.0f);
    P3dcNmsParams p;
    gchar *what = g_strdup_printf ("call %u with graph builds refused, "
        "mode %u", call, m);

    nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.5f : 0.3f);
    p.iou_rule = rule;
    compare_in (what, nms, &p, boxes, capacity, capacity - 7 * call,
        capacity, &sets[call % 2], CALL_DIRECT);
    g_free (what);
    g_free (boxes);
  }
  fail_unless_equals_int (p3dc_nms_graphs_built (nms), 0);
  call_buffers_free (&sets[0]);
  call_buffers_free (&sets[1]);
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* Calls queued while the caller captures the stream launch their kernels
 * into the caller's graph, not the workspace's: on a fresh workspace, then
 * between direct calls (whose graph must stay as the last direct call left
 * it), in workspaces that launch graphs (500 boxes: one kernel; 700:
 * three; 5000: the sort by chunks, and the grid) and in one that launches
 * its kernels one by one (40000: CUB's device sort). */
static const guint capture_capacities[] = { 500, 700, 5000, 40000 };

GST_START_TEST (test_stream_capture)
{
  const guint capacity = capture_capacities[__i__];
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  CallBuffers first, second;
  guint step;

  if (!device_takes (capacity, "test_stream_capture"))
    return;
  p3d_test_rng_init (&rng, 26 + __i__);
  fail_unless_equals_int (p3dc_nms_new (capacity, &nms), P3DC_OK);
  call_buffers_alloc (&first, capacity, capacity, TRUE);
  call_buffers_alloc (&second, capacity, capacity, TRUE);
  for (step = 0; step < 8; step++) {
    P3dcNmsMode m = step < 4 ? P3DC_NMS_BEV_ROTATED : P3DC_NMS_CIRCLE;
    gboolean captured = step % 2 == 0;
    gpointer boxes = random_boxes (&rng, m, capacity, step % 4, 30.0f);
    P3dcNmsParams p;
    gchar *what = g_strdup_printf ("capacity %u, step %u (%s)", capacity,
        step, captured ? "captured" : "direct");

    nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.5f : 0.3f);
    compare_in (what, nms, &p, boxes, capacity, capacity - step, capacity,
        step % 4 < 2 ? &first : &second,
        captured ? CALL_CAPTURED : CALL_DIRECT);
    g_free (what);
    g_free (boxes);
  }
  /* the direct calls built bev-rotated's and circle's graphs, the
   * captured ones none; the workspace that sorts with CUB has none */
  fail_unless_equals_int (p3dc_nms_graphs_built (nms), capacity <= 32768 ?
      2 : 0);
  call_buffers_free (&first);
  call_buffers_free (&second);
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* A first call, which builds its mode's graph, while another stream is
 * captured in the global mode (as PyTorch captures): the build must not
 * fail, nor break that capture; then a second call in other buffers, which
 * makes a second executable form of the graph beside such a capture, and
 * a third in the first buffers. */
GST_START_TEST (test_beside_global_capture)
{
  const guint capacity = graph_capacities[__i__];
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  CallBuffers b[2];
  guint call;

  p3d_test_rng_init (&rng, 27);
  fail_unless_equals_int (p3dc_nms_new (capacity, &nms), P3DC_OK);
  call_buffers_alloc (&b[0], capacity, capacity, TRUE);
  call_buffers_alloc (&b[1], capacity, capacity, TRUE);
  /* the first call builds the graph, the second makes a second executable
   * form (in other buffers), the third launches the first form again */
  for (call = 0; call < 3; call++) {
    gpointer boxes = random_boxes (&rng, P3DC_NMS_IOU, capacity, call,
        30.0f);
    P3dcNmsParams p;
    gchar *what = g_strdup_printf ("call %u beside a global capture", call);

    nms_cases_params (&p, P3DC_NMS_IOU, 0.4f);
    compare_in (what, nms, &p, boxes, capacity, capacity, capacity,
        &b[call % 2], CALL_BESIDE_GLOBAL_CAPTURE);
    g_free (what);
    g_free (boxes);
  }
  fail_unless_equals_int (p3dc_nms_graphs_built (nms), 1);
  /* the second form's node, set at the second call */
  fail_unless_equals_int (p3dc_nms_graph_node_sets (nms), 1);
  call_buffers_free (&b[0]);
  call_buffers_free (&b[1]);
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* @n boxes of @mode in chains of @chain along a line, scores falling
 * along it: each box suppresses its neighbours and nothing further, so
 * that each box of a chain waits for the one before (as many rounds of
 * the reduction as the chain is long), then a gap. */
static guint8 *
chain_boxes (P3dcNmsMode mode, guint n, guint chain)
{
  gsize record_size = p3dc_nms_record_size (mode);
  guint8 *boxes = g_malloc (MAX (n, 1) * record_size);
  guint k;

  for (k = 0; k < n; k++) {
    gfloat score = 1.0f - (gfloat) k / (2.0f * n);
    /* position along the line: each chain, then a gap of 5 steps */
    gfloat at = (gfloat) (k + 5 * (k / chain));

    if (mode == P3DC_NMS_IOU) {
      /* 10 x 10 pixels every 6: IoU 40 / 160 with a neighbour, 0 with the
       * next but one */
      P3dcBox2d b = { 6.0f * at, 0, 6.0f * at + 10.0f, 10.0f, score, 0 };
      memcpy (boxes + k * record_size, &b, record_size);
    } else {
      /* 1.6 x 1 m boxes 1 m apart: IoU 0.6 / 2.6 with a neighbour, 0 with
       * the next but one; circle: centres 1 m apart, threshold 1.5 m */
      P3dcBox3d b = { at, 0, 0, 1.6f, 1.0f, 1.0f, 0, score, 0 };
      memcpy (boxes + k * record_size, &b, record_size);
    }
  }
  return boxes;
}

/* Chains: box k suppresses box k + 1 and no other (scores fall along the
 * chain), so the greedy rule keeps every other box, and a box's answer
 * depends on every box before it.  The keep reduction's sweeps (up to 1024
 * boxes) settle one more box of such a chain a sweep: the chains of 20
 * settle in the sweeps, the longer ones outlast them and go to the walk;
 * in a workspace of up to 512 boxes (nms_small.cuh) the sweeps go on until
 * they settle, about 512 of them for the chain of 512.
 * Above 1024 boxes its rounds over the pair lists settle at least one
 * more box a round: 1100 boxes in one chain outlast them; 2000 boxes in
 * chains of 25 (the next chain 5 boxes' spacing on) settle in them. */
GST_START_TEST (test_suppression_chains)
{
  const guint lengths[] = { 20, 64, 512, 600, 1024, 1100, 2000 };
  const guint chain_of[] = { 20, 64, 512, 600, 1024, 1100, 25 };
  guint l, m;

  for (l = 0; l < G_N_ELEMENTS (lengths); l++) {
    guint n = lengths[l];

    for (m = P3DC_NMS_IOU; m <= P3DC_NMS_CIRCLE; m++) {
      guint8 *boxes = chain_boxes (m, n, chain_of[l]);
      P3dcNmsParams p;
      gchar *what;

      nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.5f : 0.2f);
      what = g_strdup_printf ("chain of %u boxes, mode %u", n, m);
      compare_simple (what, &p, boxes, n);
      g_free (what);
      g_free (boxes);
    }
  }
}

GST_END_TEST;

/* Workspaces of 4097 to 32768 boxes sort by chunks of 2048 keys
 * (nms_chunk_sort.cuh), larger ones by CUB's device sort: scores from a
 * few values (ties within and across chunks, +0 and -0), spoiled records
 * (dropped: the largest key), a last chunk of one box or part full, and a
 * count below the capacity, each on a workspace of its size and on one of
 * 32769 boxes (CUB's), against the reference.  Then counts far below the
 * capacity, after a call of every box has left its keys in the sort's
 * buffers past them: the sort by chunks sorts the chunks below the count
 * only (none for 0 boxes; the chunk that holds the count in part, up to a
 * chunk of one box, a full one, and one box more), and then every box
 * again. */
static const guint chunk_sizes[] = { 4097, 6149, 20000, 32768 };
static const guint short_counts[] = { 0, 1, 5, 2047, 2048, 2049, 4097 };

/* An iteration a size, a mode and a variant of random_boxes (1 or 2), so
 * that racecheck, which runs an iteration a process
 * (tests/sanitize-functions.sh), has smaller pieces to share out. */
GST_START_TEST (test_sort_chunks)
{
  const guint n = chunk_sizes[__i__ / 8];
  const P3dcNmsMode m = (P3dcNmsMode) (__i__ / 2 % 4);
  const guint variant = 1 + __i__ % 2;
  guint c;
  P3dcNms *nms = NULL, *cub = NULL;
  P3dTestRng rng;
  P3dcNmsParams p;
  gpointer boxes;
  gchar *what, *again;

  G_STATIC_ASSERT (P3DC_NMS_IOU == 0 && P3DC_NMS_CIRCLE == 3);
  if (!device_takes (32769, "test_sort_chunks"))
    return;
  p3d_test_rng_init (&rng, 27 + __i__);
  fail_unless_equals_int (p3dc_nms_new (n, &nms), P3DC_OK);
  fail_unless_equals_int (p3dc_nms_new (32769, &cub), P3DC_OK);
  /* sm_90 blocks stage up to 227 KB, the 128 KB of 32768 keys */
  if (device_major () >= 9)
    fail_unless (p3dc_nms_sorts_by_chunks (nms));
  fail_if (p3dc_nms_sorts_by_chunks (cub));
  boxes = random_boxes (&rng, m, n, variant, 70.0f);
  what = g_strdup_printf ("sort by chunks, %u boxes, mode %u, variant %u",
      n, m, variant);
  nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.5f : 0.3f);
  compare (what, nms, &p, boxes, n, n, n, TRUE);
  compare (what, nms, &p, boxes, n, n - 2049, n, TRUE);
  compare (what, cub, &p, boxes, n, n, n, TRUE);
  for (c = 0; c < G_N_ELEMENTS (short_counts); c++) {
    gchar *counted = g_strdup_printf ("%s, %u of them counted", what,
        short_counts[c]);

    compare (counted, nms, &p, boxes, n, short_counts[c], n, TRUE);
    g_free (counted);
  }
  again = g_strdup_printf ("%s, every box again", what);
  compare (again, nms, &p, boxes, n, n, n, TRUE);
  g_free (again);
  g_free (what);
  g_free (boxes);
  p3dc_nms_free (nms);
  p3dc_nms_free (cub);
}

GST_END_TEST;

/* Above 1024 boxes the reduction's rounds take a cluster of blocks on a
 * device with clusters (compute capability 9.0 on: 4 blocks up to 4096
 * boxes, 8 above, or 4 where 8 do not fit), and one block before, or where
 * the workspace is told to take fewer (p3dc_nms_limit_reduce_blocks): each
 * way the reference's output, on random scenes of every mode, on chains
 * whose rounds pass decisions from block to block (a round decides two
 * boxes of such a chain, one kept and the next doomed: chains of 24 and 40
 * settle in about 13 and 21 rounds), with fewer boxes counted than the
 * capacity (at 4096 and 10000), and with post_max.  The walk after rounds
 * that do not settle, in a cluster's block 0, is test_suppression_chains'
 * (1100 boxes in one chain, on workspaces of 1100 and 4097 boxes).
 * An iteration a capacity and a way: the blocks each way allows, the
 * device's choice (8), a cluster of 4 where it would take 8 (a device that
 * holds no cluster of 8; only above 4096 boxes is that another way), one
 * block. */
static const struct
{
  guint capacity, most;
} rounds_ways[] = {
  {1100, 8}, {1100, 1}, {4096, 8}, {4096, 1}, {10000, 8}, {10000, 4},
  {10000, 1}
};

GST_START_TEST (test_rounds_blocks)
{
  const guint n = rounds_ways[__i__].capacity, most = rounds_ways[__i__].most;
  const guint chains[] = { 24, 40 };
  const gboolean clusters = device_major () >= 9;
  guint wanted = !clusters ? 1 : MIN (most, n <= 4096 ? 4 : 8);
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  guint blocks, m, c;

  if (!device_takes (n, "test_rounds_blocks"))
    return;
  /* every way on the same scenes */
  p3d_test_rng_init (&rng, 26);
  fail_unless_equals_int (p3dc_nms_new (n, &nms), P3DC_OK);
  p3dc_nms_limit_reduce_blocks (nms, most);
  blocks = p3dc_nms_reduce_blocks (nms);
  /* the device's choice above 4096 boxes: 8, or 4 on a device that holds
   * no cluster of 8 (a MIG slice; the way of 4 takes that path) */
  if (most == 8 && wanted == 8 && blocks == 4) {
    g_print ("test_rounds_blocks, %u boxes: this GPU holds no cluster of "
        "8, the rounds take 4\n", n);
    wanted = 4;
  }
  fail_unless_equals_int (blocks, wanted);
  for (m = P3DC_NMS_IOU; m <= P3DC_NMS_CIRCLE; m++) {
    gpointer boxes = random_boxes (&rng, m, n, 2,
        p3d_test_rng_uniform (&rng, 10, 70));
    P3dcNmsParams p;
    gchar *what = g_strdup_printf ("rounds, %u boxes, mode %u, %u blocks",
        n, m, blocks);

    nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.5f : 0.2f);
    compare (what, nms, &p, boxes, n, n, n, TRUE);
    compare (what, nms, &p, boxes, n, MIN (n - 1, 1025 + n / 3), n, TRUE);
    p.per_class = TRUE;
    p.post_max = 40;
    compare (what, nms, &p, boxes, n, n, n, TRUE);
    g_free (what);
    g_free (boxes);
    for (c = 0; c < G_N_ELEMENTS (chains); c++) {
      guint8 *chain = chain_boxes (m, n, chains[c]);

      nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.5f : 0.2f);
      what = g_strdup_printf ("rounds, %u boxes in chains of %u, mode %u, "
          "%u blocks", n, chains[c], m, blocks);
      compare (what, nms, &p, chain, n, n, n, TRUE);
      g_free (what);
      g_free (chain);
    }
  }
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* Extreme layouts on a full workspace, every mode, per class or not, with
 * and without post_max: every box the same (the first suppresses all, or
 * per class the first of each label), every box apart (all kept: 64 kept
 * boxes a tile, the most removals to apply), and a dense cluster where most
 * pairs overlap.  512 boxes (one kernel, nms_small.cuh), FULL_CAPACITY
 * boxes (the sweeps), 1500 (the rounds
 * over the pair lists, whose boxes here have more pairs than the rounds
 * take: the walk), and 5000 (the same; bev-aligned and circle find their
 * pairs through the grid, nms_grid.cuh: every centre at one point, one
 * cell; the walk reads the mask the grid set). */
static const guint extreme_sizes[] = { 512, FULL_CAPACITY, 1500, 5000 };

GST_START_TEST (test_extremes)
{
  guint n = extreme_sizes[__i__], m, layout, per_class, i;
  P3dTestRng rng;
  P3dcNms *nms = NULL;

  p3d_test_rng_init (&rng, 25);
  fail_unless_equals_int (p3dc_nms_new (n, &nms), P3DC_OK);
  for (m = P3DC_NMS_IOU; m <= P3DC_NMS_CIRCLE; m++) {
    gsize record_size = p3dc_nms_record_size (m);
    guint8 *boxes = g_malloc (n * record_size);

    for (layout = 0; layout < 3; layout++) {
      for (i = 0; i < n; i++) {
        /* same: all at 0; apart: a grid of 10 m (pixel) steps; cluster:
         * centres within 1 m (pixel), sizes 3 to 5 */
        gfloat x = layout == 1 ? 10.0f * (i % 32) :
            layout == 2 ? p3d_test_rng_uniform (&rng, 0, 1) : 0;
        gfloat y = layout == 1 ? 10.0f * (i / 32) :
            layout == 2 ? p3d_test_rng_uniform (&rng, 0, 1) : 0;
        gfloat size = layout == 2 ? p3d_test_rng_uniform (&rng, 3, 5) : 4;
        gfloat score = p3d_test_rng_uniform (&rng, 0, 1);
        gint32 label = (gint32) (i % 3);

        if (m == P3DC_NMS_IOU) {
          P3dcBox2d b = { x, y, x + size, y + 0.75f * size, score, label };

          memcpy (boxes + i * record_size, &b, record_size);
        } else {
          P3dcBox3d b = { x, y, 0, size, 0.5f * size, 1.5f,
            layout == 2 ? p3d_test_rng_uniform (&rng, -3, 3) : 0.3f, score,
            label
          };

          memcpy (boxes + i * record_size, &b, record_size);
        }
      }
      for (per_class = 0; per_class < 2; per_class++) {
        P3dcNmsParams p;
        gchar *what = g_strdup_printf ("extremes, mode %u, layout %u, per "
            "class %u", m, layout, per_class);

        nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 2.0f : 0.3f);
        p.per_class = per_class;
        compare (what, nms, &p, boxes, n, n, n, TRUE);
        p.iou_rule = P3DC_NMS_IOU_RULE_MMCV;
        p.post_max = 100;
        compare (what, nms, &p, boxes, n, n, n, TRUE);
        p.post_max = 0;
        p.pre_max = 700;
        compare (what, nms, &p, boxes, n, n, 50, FALSE);
        g_free (what);
      }
    }
    g_free (boxes);
  }
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* Above 1024 boxes: a stack of identical boxes among 1100 scattered ones,
 * so that the first box of the stack suppresses, and the last is
 * suppressed by, 254, 255 or 256 boxes: the rounds over the pair lists
 * take up to 255 either way, the walk more (nms_reduce.cuh). */
GST_START_TEST (test_list_slots)
{
  const guint stacks[] = { 255, 256, 257 };
  guint n = 1100, s, m, i;
  P3dTestRng rng;

  p3d_test_rng_init (&rng, 26);
  for (s = 0; s < G_N_ELEMENTS (stacks); s++) {
    for (m = P3DC_NMS_IOU; m <= P3DC_NMS_CIRCLE; m++) {
      gsize record_size = p3dc_nms_record_size (m);
      guint8 *boxes = g_malloc (n * record_size);
      P3dcNmsParams p;
      gchar *what;

      for (i = 0; i < n; i++) {
        /* the stack at (-50, -50), the others over 200 x 200 */
        gboolean stacked = i < stacks[s];
        gfloat x = stacked ? -50.0f : p3d_test_rng_uniform (&rng, 0, 200);
        gfloat y = stacked ? -50.0f : p3d_test_rng_uniform (&rng, 0, 200);
        gfloat score = p3d_test_rng_uniform (&rng, 0, 1);

        if (m == P3DC_NMS_IOU) {
          P3dcBox2d b = { x, y, x + 4.0f, y + 3.0f, score, 0 };

          memcpy (boxes + i * record_size, &b, record_size);
        } else {
          P3dcBox3d b = { x, y, 0, 4.0f, 2.0f, 1.5f, 0.3f, score, 0 };

          memcpy (boxes + i * record_size, &b, record_size);
        }
      }
      nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 2.0f : 0.3f);
      what = g_strdup_printf ("stack of %u in %u boxes, mode %u", stacks[s],
          n, m);
      compare_simple (what, &p, boxes, n);
      g_free (what);
      g_free (boxes);
    }
  }
}

GST_END_TEST;

/* One layout of test_grid: box i of @n as a centre, a size and a label. */
typedef struct
{
  gfloat x, y, dx, dy, yaw;
  gint32 label;
} GridBox;

static void
grid_layout (P3dTestRng * rng, guint layout, guint i, guint n, GridBox * b)
{
  b->yaw = p3d_test_rng_uniform (rng, -3.2f, 3.2f);
  b->label = (gint32) (i % 3);
  b->x = p3d_test_rng_uniform (rng, -60, 60);
  b->y = p3d_test_rng_uniform (rng, -60, 60);
  b->dx = p3d_test_rng_uniform (rng, 0.5f, 5);
  b->dy = p3d_test_rng_uniform (rng, 0.5f, 2.5f);
  switch (layout) {
    case 0:
      /* cars with a few boxes a hundred times larger, one over
       * everything, and boxes without area (which take no part) */
      if (i % 500 == 7) {
        b->dx = p3d_test_rng_uniform (rng, 20, 200);
        b->dy = p3d_test_rng_uniform (rng, 20, 200);
      } else if (i % 97 == 3) {
        b->dx = 0;
      } else if (i == n / 2) {
        b->x = b->y = 0;
        b->dx = b->dy = 300;
      }
      break;
    case 1:
      /* a few far outliers: the cells are much larger than the boxes */
      if (i % 1000 == 1) {
        b->x = p3d_test_rng_uniform (rng, -1e5f, 1e5f);
        b->y = p3d_test_rng_uniform (rng, -1e5f, 1e5f);
      }
      break;
    case 2:
      /* a lattice through the origin whose neighbours touch, overlap by
       * little or stand apart by little, whatever the cells' edges: the
       * pairs at the edge of every box's reach */
      b->x = (gfloat) ((gint) (i % 80) - 40) * (2.0f + 1e-3f *
          (gfloat) ((gint) (i % 3) - 1));
      b->y = (gfloat) ((gint) (i / 80) - 40) * 2.0f;
      b->dx = 2.0f;
      b->dy = 1.0f + 1e-3f * (gfloat) (i % 5);
      b->yaw = (i % 7 == 0) ? 1.5707964f : 0;
      break;
    default:
      /* one box beyond the sizes whose pair test runs scaled
       * (box_overlap.h): the dense kernel, in a workspace with a grid */
      if (i == 11) {
        b->x = 0x1p41f;
        b->dx = b->dy = 0x1p42f;
      }
      break;
  }
}

/* Bev-aligned and circle calls of more than 1024 boxes in a workspace
 * above 4096 find their pairs through a grid of the centres (nms_grid.cuh)
 * instead of by testing every pair: it must find every pair the test
 * accepts.  Layouts that strain it: boxes of very different reaches, far
 * outliers, pairs at the edge of the reaches, and a box the grid leaves to
 * the dense kernel; per class or not; and the same layouts for the other
 * modes, whose calls test every pair (mmcv's rule, the pixel offset). */
GST_START_TEST (test_grid)
{
  const guint n = 6400;
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  guint layout, m, i, per_class;

  if (!device_takes (n, "test_grid"))
    return;
  p3d_test_rng_init (&rng, 27);
  fail_unless_equals_int (p3dc_nms_new (n, &nms), P3DC_OK);
  for (layout = 0; layout < 4; layout++) {
    for (m = P3DC_NMS_IOU; m <= P3DC_NMS_CIRCLE; m++) {
      gsize record_size = p3dc_nms_record_size (m);
      guint8 *boxes = g_malloc (n * record_size);

      for (i = 0; i < n; i++) {
        GridBox g;
        gfloat score = p3d_test_rng_uniform (&rng, 0, 1);

        grid_layout (&rng, layout, i, n, &g);
        if (m == P3DC_NMS_IOU) {
          /* pixels: ten to the metre */
          P3dcBox2d b = { 10 * (g.x - 0.5f * g.dx), 10 * (g.y - 0.5f * g.dy),
            10 * (g.x + 0.5f * g.dx), 10 * (g.y + 0.5f * g.dy), score, g.label
          };
          memcpy (boxes + i * record_size, &b, record_size);
        } else {
          P3dcBox3d b = { g.x, g.y, 0, g.dx, g.dy, 1.5f, g.yaw, score,
            g.label
          };
          memcpy (boxes + i * record_size, &b, record_size);
        }
      }
      for (per_class = 0; per_class < 2; per_class++) {
        P3dcNmsParams p;
        gchar *what = g_strdup_printf ("grid, layout %u, mode %u, per class "
            "%u", layout, m, per_class);

        /* circle: 2 m, the lattice's spacing; on the lattice any overlap
         * at all suppresses, elsewhere a low threshold */
        nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 2.0f :
            layout == 2 ? 0.0f : 0.01f);
        p.per_class = per_class;
        compare (what, nms, &p, boxes, n, n, n, TRUE);
        if (m == P3DC_NMS_BEV_ROTATED) {
          p.iou_rule = P3DC_NMS_IOU_RULE_MMCV;
          compare (what, nms, &p, boxes, n, n, n, TRUE);
        }
        if (m == P3DC_NMS_IOU) {
          /* the legacy offset of a pixel widens every box */
          p.offset = 1.0f;
          compare (what, nms, &p, boxes, n, n, n, TRUE);
        }
        g_free (what);
      }
      g_free (boxes);
    }
  }
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* The largest workspace (1024 mask words a row: every thread of the
 * reduction's scan has a tile), with a small and a full count. */
GST_START_TEST (test_max_capacity)
{
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  guint n = P3DC_NMS_MAX_CAPACITY;
  P3dcBox3d *boxes;
  P3dcNmsParams p;

  if (!device_takes (n, "test_max_capacity"))
    return;
  boxes = g_new (P3dcBox3d, n);
  p3d_test_rng_init (&rng, 24);
  nms_cases_objects3d (&rng, boxes, n, 200.0f, 6, 3);
  fail_unless_equals_int (p3dc_nms_new (n, &nms), P3DC_OK);
  nms_cases_params (&p, P3DC_NMS_CIRCLE, 1.0f);
  compare ("max capacity, 3000 boxes", nms, &p, boxes, n, 3000, 3000, TRUE);
  compare ("max capacity, full", nms, &p, boxes, n, n, n, TRUE);
  /* the walk stops once post_max boxes are kept */
  nms_cases_params (&p, P3DC_NMS_BEV_ROTATED, 0.1f);
  p.post_max = 500;
  compare ("max capacity, rotated, post_max", nms, &p, boxes, n, 20000, n,
      TRUE);
  p3dc_nms_free (nms);
  g_free (boxes);
}

GST_END_TEST;

/* One workspace's mask between calls: bev-aligned and circle calls in a
 * workspace with the grid (5000 boxes) set only their pairs' bits, into
 * words that earlier calls of every kind wrote in other layouts (other
 * counts); a word a call did not clear shows where the keep reduction
 * walks the mask.  Here calls with a pile of 300 boxes in one place (each
 * with more than 255 pairs, so the call walks) after scattered grid calls,
 * a dense iou call, grid calls whose piles ran out of list slots, and a
 * grid-mode call of 1000 boxes (which takes the dense kernel); each
 * against the reference.  (A build that cleared each call's listed bits
 * in the next call instead of zeroing the mask failed here when either
 * half was left out: docs/performance.md, nms.) */
static const struct
{
  P3dcNmsMode mode;
  guint count;
  gboolean pile;
} mask_calls[] = {
  {P3DC_NMS_CIRCLE, 5000, TRUE}, {P3DC_NMS_CIRCLE, 5000, FALSE},
  {P3DC_NMS_CIRCLE, 4000, TRUE}, {P3DC_NMS_CIRCLE, 3000, FALSE},
  {P3DC_NMS_BEV_ALIGNED, 5000, TRUE}, {P3DC_NMS_IOU, 5000, FALSE},
  {P3DC_NMS_CIRCLE, 4500, TRUE}, {P3DC_NMS_CIRCLE, 5000, TRUE},
  {P3DC_NMS_CIRCLE, 2000, FALSE}, {P3DC_NMS_BEV_ALIGNED, 1000, FALSE},
  {P3DC_NMS_CIRCLE, 4800, TRUE}, {P3DC_NMS_BEV_ALIGNED, 3500, FALSE},
  {P3DC_NMS_BEV_ALIGNED, 5000, TRUE},
};

GST_START_TEST (test_mask_between_calls)
{
  const guint capacity = 5000, pile = 300;
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  guint call, k;

  p3d_test_rng_init (&rng, 32);
  fail_unless_equals_int (p3dc_nms_new (capacity, &nms), P3DC_OK);
  for (call = 0; call < G_N_ELEMENTS (mask_calls); call++) {
    const P3dcNmsMode m = mask_calls[call].mode;
    guint8 *boxes = random_boxes (&rng, m, capacity, 0, 60.0f);
    P3dcNmsParams p;
    gchar *what = g_strdup_printf ("call %u: mode %u, %u boxes%s", call, m,
        mask_calls[call].count, mask_calls[call].pile ? ", a pile" : "");

    if (mask_calls[call].pile) {
      /* copies of box 0 a centimetre apart, of their own scores */
      for (k = 1; k < pile; k++) {
        P3dcBox3d b;

        memcpy (&b, boxes, sizeof b);
        b.x += 0.01f * k;
        b.score = p3d_test_rng_uniform (&rng, 0.0f, 1.0f);
        memcpy (boxes + k * sizeof b, &b, sizeof b);
      }
    }
    nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.5f : 0.2f);
    compare (what, nms, &p, boxes, capacity, mask_calls[call].count, capacity,
        TRUE);
    g_free (what);
    g_free (boxes);
  }
  p3dc_nms_free (nms);
}

GST_END_TEST;

/* The capacity the device takes (p3dc_nms_device_capacity): all of
 * P3DC_NMS_MAX_CAPACITY on Hopper (227 KB of shared memory a block); on
 * devices with less, simulated with the opt-in maximum of sm_75 (64 KB),
 * sm_86 (99 KB) and sm_80 (163 KB), as many boxes as their round state
 * (2.25 bytes a box) fits beside the reduction's static shared memory
 * (47.3 KB today; the test takes 32 to 48 KB).  A workspace of that
 * capacity gives the reference's boxes (by chunks up to 32768 boxes, by
 * CUB's sort above), one of a box more is refused with
 * P3DC_ERROR_TOO_LARGE, and 1024 boxes, which need no round state, are
 * always taken.  Where the GPU itself has less than a simulated limit, its
 * own capacity holds. */
static const guint32 shared_limits[] = { 65536, 101376, 166912 };

GST_START_TEST (test_device_capacity)
{
  const guint32 limit = shared_limits[__i__];
  const P3dcNmsMode modes[] = { P3DC_NMS_IOU, P3DC_NMS_CIRCLE,
    P3DC_NMS_BEV_ROTATED
  };
  const P3dcNmsMode m = modes[__i__];
  guint32 own = 0, most = 0;
  P3dTestRng rng;
  P3dcNms *nms = NULL;
  P3dcNmsParams p;
  gpointer boxes;
  gchar *what;

  fail_unless_equals_int (p3dc_nms_device_capacity (&own), P3DC_OK);
  if (device_major () == 9)
    fail_unless_equals_int (own, P3DC_NMS_MAX_CAPACITY);

  p3dc_nms_limit_shared_memory (limit);
  fail_unless_equals_int (p3dc_nms_device_capacity (&most), P3DC_OK);
  fail_unless (most <= own);
  /* 2.25 bytes a box, beside 32 to 48 KB of static shared memory, where
   * the limit and not the GPU bounds it */
  if (most < own)
    fail_unless (most * 9 / 4 + 32768 <= limit
        && most * 9 / 4 + 49152 + 64 >= limit,
        "%u boxes for %u bytes of shared memory", most, limit);
  fail_unless_equals_int (p3dc_nms_new (most + 1, &nms), P3DC_ERROR_TOO_LARGE);
  fail_unless (nms == NULL);
  fail_unless_equals_int (p3dc_nms_new (1024, &nms), P3DC_OK);
  p3dc_nms_free (nms);
  nms = NULL;

  fail_unless_equals_int (p3dc_nms_new (most, &nms), P3DC_OK);
  fail_unless_equals_int (p3dc_nms_sorts_by_chunks (nms), most > 4096
      && most <= 32768);
  p3d_test_rng_init (&rng, 31 + __i__);
  boxes = random_boxes (&rng, m, most, 0, 60.0f);
  what = g_strdup_printf ("%u boxes, mode %u, %u bytes of shared memory",
      most, m, limit);
  nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.5f : 0.3f);
  compare (what, nms, &p, boxes, most, most, most, TRUE);
  g_free (what);
  g_free (boxes);
  p3dc_nms_free (nms);
  p3dc_nms_limit_shared_memory (0);
}

GST_END_TEST;

static Suite *
nms_cuda_suite (void)
{
  Suite *s = suite_create ("nms_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_errors);
  tcase_add_test (tc, test_threshold_pairs);
  p3d_tcase_add_loop_test (tc, test_special_cases, 0,
      G_N_ELEMENTS (workspace_sizes));
  tcase_add_test (tc, test_random_small);
  tcase_add_test (tc, test_large);
  p3d_tcase_add_loop_test (tc, test_count_and_reuse, 0,
      G_N_ELEMENTS (reuse_capacities));
  p3d_tcase_add_loop_test (tc, test_graph_reuse, 0,
      G_N_ELEMENTS (graph_capacities));
  p3d_tcase_add_loop_test (tc, test_buffers_set_one_node, 0,
      G_N_ELEMENTS (graph_capacities));
  p3d_tcase_add_loop_test (tc, test_buffers_one_form, 0,
      G_N_ELEMENTS (graph_capacities));
  p3d_tcase_add_loop_test (tc, test_graph_build_refused, 0,
      G_N_ELEMENTS (graph_capacities));
  p3d_tcase_add_loop_test (tc, test_stream_capture, 0,
      G_N_ELEMENTS (capture_capacities));
  p3d_tcase_add_loop_test (tc, test_beside_global_capture, 0,
      G_N_ELEMENTS (graph_capacities));
  tcase_add_test (tc, test_suppression_chains);
  p3d_tcase_add_loop_test (tc, test_rounds_blocks, 0,
      G_N_ELEMENTS (rounds_ways));
  p3d_tcase_add_loop_test (tc, test_sort_chunks, 0,
      8 * G_N_ELEMENTS (chunk_sizes));
  p3d_tcase_add_loop_test (tc, test_extremes, 0, G_N_ELEMENTS (extreme_sizes));
  tcase_add_test (tc, test_list_slots);
  tcase_add_test (tc, test_grid);
  tcase_add_test (tc, test_max_capacity);
  tcase_add_test (tc, test_mask_between_calls);
  p3d_tcase_add_loop_test (tc, test_device_capacity, 0,
      G_N_ELEMENTS (shared_limits));
  return s;
}

P3D_CHECK_MAIN (nms_cuda);
