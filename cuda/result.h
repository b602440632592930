/* gst-perception compute library: result codes shared by every operation.
 *
 * The compute library is free of GStreamer and GLib: plain C99 with sizes in
 * size_t and pointers in void *, so that it can be called from any C program,
 * a benchmark or an element alike.
 */
#ifndef P3DC_RESULT_H
#define P3DC_RESULT_H

#ifdef __cplusplus
extern "C" {
#endif

/* 0 on success; a positive value is a cudaError_t from the CUDA runtime,
 * passed through unchanged; a negative value is one of the codes below. */
typedef int P3dcResult;

#define P3DC_OK 0
/* An argument is out of its documented range (a NULL pointer, a zero size). */
#define P3DC_ERROR_INVALID_ARGUMENT (-1)
/* The library was built without CUDA, so no device function can run. */
#define P3DC_ERROR_NO_CUDA (-2)
/* The host ran out of memory. */
#define P3DC_ERROR_OUT_OF_MEMORY (-3)
/* Work queued on a stream or behind an event has not finished yet. */
#define P3DC_ERROR_NOT_READY (-4)
/* An input is larger than the operation supports (see the operation). */
#define P3DC_ERROR_TOO_LARGE (-5)
/* An optional library this needs is missing (built without it, or not
 * found at run time: cuDNN for the convolutional network). */
#define P3DC_ERROR_UNSUPPORTED (-6)
/* A cuDNN call failed (the operation's message names it). */
#define P3DC_ERROR_CUDNN (-7)

/* A short English description of @result, for error messages; never NULL. */
const char *p3dc_result_string (P3dcResult result);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_RESULT_H */
