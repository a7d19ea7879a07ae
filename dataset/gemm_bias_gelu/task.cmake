# Link libraries per implementation (see dataset/CMakeLists.txt).
set(D2K_LIBS_naive CUDA::cublas)
set(D2K_LIBS_library CUDA::cublasLt)
