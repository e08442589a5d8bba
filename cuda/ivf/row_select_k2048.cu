// Row selection for k <= 2048 (row_select_kernel.cuh).
#include "cuda/ivf/row_select_kernel.cuh"

QV_INSTANTIATE_ROW_SELECT(64, 8)
