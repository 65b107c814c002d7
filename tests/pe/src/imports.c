/* An EXE without the C runtime that imports from several DLLs, one function
   of corpus_dll.dll by ordinal only (corpus_secret, NONAME) and one by name. */
#include <winsock2.h>
#include <windows.h>

int corpus_add(int a, int b);
int corpus_secret(int a);

static volatile int sink;

void corpus_entry(void)
{
    WSADATA wsa;
    HKEY key;
    DWORD t = GetTickCount();
    sink = corpus_add((int)t, 1) + corpus_secret((int)t);
    if (t == 1) {
        MessageBoxA(NULL, "rustfx corpus", "imports", MB_OK);
        RegOpenKeyExA(HKEY_CURRENT_USER, "Software\\rustfx", 0, KEY_READ, &key);
        WSAStartup(MAKEWORD(2, 2), &wsa);
    }
    ExitProcess(0);
}
