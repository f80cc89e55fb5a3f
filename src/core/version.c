/* The library's version and binary-interface version (kopt/core.h), for bindings. */
#include "kopt/core.h"

#ifndef KOPT_VERSION
#define KOPT_VERSION "unknown"
#endif

int kopt_abi_version(void)
{
    return KOPT_ABI_VERSION;
}

const char *kopt_version_string(void)
{
    return KOPT_VERSION;
}
