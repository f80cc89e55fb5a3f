/* stub */
#include "kopt/cute.h"
#include <stdlib.h>
#include <string.h>
char *kopt_cute_summarize_errors(const char *log) { (void)log; return strdup(""); }
