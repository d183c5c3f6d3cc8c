/* Compiled, never run: the driver simulator's declarations beside NVIDIA's
 * real cuda.h. __CUDA_API_VERSION_INTERNAL makes cuda.h declare every exported
 * form under its own name (legacy 32-bit forms, _v2, _ptds, _ptsz) instead of
 * mapping names with macros, so each of the simulator's prototypes meets the
 * real one for the same symbol: any difference in a parameter or result type
 * is a "conflicting types" error. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#define CUDASIM_API
#include "cuda_sim_api.h"
