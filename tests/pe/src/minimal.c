/* The smallest useful EXE: no C runtime, one import. Variants are derived
   from it by build_corpus.py (section names, entry point, overlay, ...). */
#include <windows.h>

static const char message[] = "rustfx minimal corpus exe";
const char *volatile message_ptr = message;

void corpus_entry(void)
{
    ExitProcess(message_ptr[0] == 'r' ? 0 : 1);
}
