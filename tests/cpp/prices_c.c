/* prices_c.c — the C side of test_cpp.cpp's comparison: the Black-Scholes
 * example's blackscholes_prices, compiled as C (pe.h's operations are C11
 * _Generic macros); the example's main is renamed out of the way. */
#define main blackscholes_c_main
#include "../../examples/blackscholes.c"
