/* C runtime EXE with a TLS callback (the mingw CRT provides _tls_used, the
   IMAGE_TLS_DIRECTORY; the callback goes into .CRT$XLB). */
#include <windows.h>
#include <stdio.h>

static void NTAPI corpus_tls_callback(PVOID h, DWORD reason, PVOID reserved)
{
    (void)h; (void)reserved;
    if (reason == DLL_PROCESS_ATTACH)
        OutputDebugStringA("rustfx tls callback");
}

__attribute__((section(".CRT$XLB"), used))
const PIMAGE_TLS_CALLBACK corpus_tls_callback_ptr = corpus_tls_callback;

__thread int corpus_tls_counter = 7;

int main(void)
{
    corpus_tls_counter++;
    printf("tls %d\n", corpus_tls_counter);
    return 0;
}
