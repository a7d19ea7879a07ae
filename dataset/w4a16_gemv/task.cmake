# Link libraries per implementation (see dataset/CMakeLists.txt): naive and library end in a cuBLAS GEMM.
set(D2K_LIBS_naive CUDA::cublas)
set(D2K_LIBS_library CUDA::cublas)
