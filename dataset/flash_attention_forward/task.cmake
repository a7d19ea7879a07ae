# Link libraries per implementation (see dataset/CMakeLists.txt): naive's two products are cuBLAS.
set(D2K_LIBS_naive CUDA::cublas)
