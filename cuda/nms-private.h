/* gst-perception compute library: what nms's tests reach beyond nms.h
 * (not installed). */
#ifndef P3DC_NMS_PRIVATE_H
#define P3DC_NMS_PRIVATE_H

#include "nms.h"

#ifdef __cplusplus
extern "C" {
#endif

/* p3dc_nms_cpu (), and in *@pair_tests (may be NULL) how many pair tests
 * its greedy walk made: the tests check that scattered boxes cost about
 * one each, not one per kept box. */
P3dcResult p3dc_nms_cpu_counted (const P3dcNmsParams * params,
    const void *boxes, uint32_t n_boxes, void *out, uint32_t out_capacity,
    uint32_t * out_count, int32_t * kept_index, uint64_t * pair_tests);

/* How many of @nms's CUDA graphs (one a mode, and one for bev-rotated
 * under mmcv's rule, in workspaces of up to 4096 boxes) calls have built:
 * the tests check that their calls ran as graphs. */
uint32_t p3dc_nms_graphs_built (const P3dcNms * nms);

/* How many times calls have set a node of @nms's graphs again since each
 * was built (its arguments changed): the tests check that a call whose
 * buffers change sets one node, the first kernel's, and only where no
 * executable form of the graph holds its launches. */
uint64_t p3dc_nms_graph_node_sets (const P3dcNms * nms);

/* The executable forms a graph keeps (kernel_graph.cuh): the tests' turns
 * of buffers are worked out for it. */
uint32_t p3dc_nms_graph_forms (void);

/* Makes every later making of a second executable form of @nms's graphs
 * fail, as where instantiating one more graph fails: the tests check that
 * calls then set the nodes of the forms made, as a graph of one form
 * does. */
void p3dc_nms_refuse_graph_forms (P3dcNms * nms);

/* Makes every later graph build of @nms fail, as on a driver that takes no
 * CUDA graph: the tests check that calls then launch their kernels one by
 * one and give the same results. */
void p3dc_nms_refuse_graph_builds (P3dcNms * nms);

/* Makes @nms's keep reduction take at most @most blocks where it would
 * take a cluster of more (nms_reduce.cuh): a cluster of 4 where @most is 4
 * to 7, as on a device that holds no cluster of 8; one block where @most
 * is below 4, as on a device without clusters.  Called before @nms's first
 * call.  The tests run the rounds every way. */
void p3dc_nms_limit_reduce_blocks (P3dcNms * nms, uint32_t most);

/* The blocks @nms's keep reduction takes for calls of more than 1024
 * boxes: a cluster's (4 or 8, by the capacity), or 1. */
uint32_t p3dc_nms_reduce_blocks (const P3dcNms * nms);

/* Whether @nms sorts by chunks (nms_chunk_sort.cuh: capacities of 4097 to
 * 32768 boxes, where the device's blocks can stage the capacity's keys),
 * rather than by CUB's device sort or one kernel. */
int p3dc_nms_sorts_by_chunks (const P3dcNms * nms);

/* Makes later workspaces see at most @bytes of shared memory a block (0:
 * the device's own), as on a device with less: the tests check
 * p3dc_nms_device_capacity's limit and the workspaces it allows (CUB's
 * sort above 32768 boxes).  Not thread-safe; for the tests only. */
void p3dc_nms_limit_shared_memory (size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_NMS_PRIVATE_H */
