// Selection kernels for k <= 64 (warp queue of 2 register(s) per lane, thread queue of 3).
#include "cuda/select/select_kernel.cuh"

QV_INSTANTIATE_SELECT(2, 3)
