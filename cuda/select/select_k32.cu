// Selection kernels for k <= 32 (warp queue of 1 register(s) per lane, thread queue of 2).
#include "cuda/select/select_kernel.cuh"

QV_INSTANTIATE_SELECT(1, 2)
