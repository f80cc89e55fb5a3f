/*@kopt {"mode": "host"} */
// problem: examples/vector_add
// expect: TAMPER
// Host mode: patches the CUDA driver's cuEventElapsedTime in its own process (where a
// harness that times in-process would call it) so every interval reads as 1 microsecond.
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "host_common.cuh"

static void patch(void *fn)
{
    /* x86-64: mov dword [rdi], 0x358637bd (1e-3f ms); xor eax, eax; ret */
    static const unsigned char stub[] = {0xc7, 0x07, 0xbd, 0x37, 0x86, 0x35, 0x31, 0xc0, 0xc3};
    long page = sysconf(_SC_PAGESIZE);
    void *base = (void *)((uintptr_t)fn & ~(uintptr_t)(page - 1));
    if (mprotect(base, (size_t)page * 2, PROT_READ | PROT_WRITE | PROT_EXEC) == 0)
        memcpy(fn, stub, sizeof(stub));
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    static int done;
    if (!done) {
        void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        const char *names[] = {"cuEventElapsedTime_v2", "cuEventElapsedTime"};
        done = 1;
        for (int i = 0; cuda && i < 2; i++) {
            void *fn = dlsym(cuda, names[i]);
            if (fn)
                patch(fn);
        }
    }
    return adv_vector_add(io);
}
