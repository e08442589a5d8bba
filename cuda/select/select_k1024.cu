// Selection kernels for k <= 1024 (warp queue of 32 register(s) per lane, thread queue of 8).
#include "cuda/select/select_kernel.cuh"

QV_INSTANTIATE_SELECT(32, 8)
