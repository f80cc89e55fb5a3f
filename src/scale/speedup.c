/* The arithmetic of a scale-out measurement: speed-up over one slot and its efficiency
 * (bench/scale_session.sh and the tests use the same definition). */
#include "kopt/scale.h"

double kopt_scale_speedup(double t1, double tn, int n, double *efficiency)
{
    double s = t1 > 0 && tn > 0 ? t1 / tn : 0;

    if (efficiency)
        *efficiency = n > 0 ? s / n : 0;
    return s;
}
