/* The entry point lives in its own section (.zentry), not the first one. */
#include <windows.h>

static volatile int sink;

int helper(int x) { return x * 3 + 1; }

__attribute__((section(".zentry"))) void corpus_entry(void)
{
    sink = helper(GetTickCount());
    ExitProcess(0);
}
