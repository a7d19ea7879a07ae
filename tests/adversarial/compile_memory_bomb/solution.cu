// Exploit: takes the evaluator's host down at compile time. The preprocessor reads /dev/zero
// into memory until the machine runs out; the compile's memory limit stops it as the
// candidate's own COMPILE_ERROR (docs/isolation.md, "The compile stage").
#include "/dev/zero"
