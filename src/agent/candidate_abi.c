/* The candidate ABI as the prompts show it: kopt/candidate.h, read where host-mode compiles
 * find it, so a coder sees the very declarations its candidate is compiled against. */
#include "kopt/agent.h"
#include "kopt/compile.h"

#include <stdlib.h>
#include <unistd.h>

kopt_status kopt_agent_candidate_abi(kopt_ctx *ctx, char **out)
{
    char *path = kopt_path_join(kopt_compile_include_dir(), "kopt/candidate.h");
    kopt_status rc;

    *out = NULL;
    if (!path)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "candidate header path");
    if (access(path, R_OK) != 0)
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s: no such file (the candidate ABI's header; "
                         "$KOPT_INCLUDE_DIR names its folder)", path);
    else
        rc = kopt_file_read(ctx, path, out, NULL);
    free(path);
    return rc;
}
