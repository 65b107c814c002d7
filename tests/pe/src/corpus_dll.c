/* A small DLL: named exports, a data export, an export by ordinal only
   (NONAME in corpus_dll.def) and a forwarder (also in the .def). */
#include <windows.h>

BOOL WINAPI corpus_dll_entry(HINSTANCE h, DWORD reason, LPVOID reserved)
{
    (void)h; (void)reason; (void)reserved;
    return TRUE;
}

int corpus_add(int a, int b) { return a + b; }
int corpus_mul(int a, int b) { return a * b; }
/* Exported by ordinal only (@3 NONAME). */
int corpus_secret(int a) { return a ^ 0x5a5a; }
const char corpus_version[] = "rustfx-corpus 1.0";
/* A relocated pointer, so that the DLL has base relocations. */
const char *const corpus_version_ptr = corpus_version;
