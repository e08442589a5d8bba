// Selection kernels for k <= 256 (warp queue of 8 register(s) per lane, thread queue of 4).
#include "cuda/select/select_kernel.cuh"

QV_INSTANTIATE_SELECT(8, 4)
