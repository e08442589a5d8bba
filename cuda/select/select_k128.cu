// Selection kernels for k <= 128 (warp queue of 4 register(s) per lane, thread queue of 3).
#include "cuda/select/select_kernel.cuh"

QV_INSTANTIATE_SELECT(4, 3)
