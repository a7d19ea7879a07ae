// kernel
// %VARIANT% generic -DFAR_GENERIC_ONLY=1
//   %VARIANT% rows8  -DHJ_ITEMS=8 -DHJ_MIN_BLOCKS=1 
__global__ void k() {}
