/* gst-perception: the support library gstperception-1.0, in one include.
 *
 * Media types (caps <-> info structs, tensor layouts), the CUDA device
 * memory, the sharing of one device in a pipeline, the buffer pool, and the
 * base class of the GPU filters. */
#ifndef __P3D_PERCEPTION_H__
#define __P3D_PERCEPTION_H__

#include "p3dformats.h"
#include "p3dfileformats.h"
#include "p3dtensor.h"
#include "p3dpointcloud.h"
#include "p3dvoxels.h"
#include "p3dpillars.h"
#include "p3dcamerafeatures.h"
#include "p3dbevfeatures.h"
#include "p3dboxes.h"
#include "p3dcudamemory.h"
#include "p3dcudacontext.h"
#include "p3dreadback.h"
#include "p3dtensorpool.h"
#include "p3dcudafilter.h"
#include "p3dparamspec.h"

#endif /* __P3D_PERCEPTION_H__ */
