# Link libraries per implementation (see dataset/CMakeLists.txt): naive and library call cuBLAS;
# the expert is CUTLASS (headers only).
set(D2K_LIBS_naive CUDA::cublas)
set(D2K_LIBS_library CUDA::cublas)
