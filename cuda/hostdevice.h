/* Functions written once and compiled for both the C reference and the CUDA
 * kernels carry P3DC_HOST_DEVICE, so the two paths share the very arithmetic
 * that their results must agree on, bit for bit. */
#ifndef P3DC_HOSTDEVICE_H
#define P3DC_HOSTDEVICE_H

#ifdef __CUDACC__
#define P3DC_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define P3DC_HOST_DEVICE inline
#endif

#endif /* P3DC_HOSTDEVICE_H */
