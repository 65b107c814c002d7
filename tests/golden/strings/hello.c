/* Source of the ELF inputs of tests/golden/generate_strings.py (the
 * binaries are committed; rebuilding them is not needed to run the tests):
 *   gcc -Os -s -o elf_hello_stripped hello.c
 *   gcc -O0 -g0 -o elf_hello hello.c
 * ASCII and UTF-16LE literals, a tab, a DEL, Latin-1 bytes and a UTF-16
 * string at an odd offset of a packed struct. */
#include <stdio.h>
#include <uchar.h>

static const char16_t wide[] = u"Wide\tstring: C:\\Windows\\System32\\kernel32.dll";
static const char16_t mixed[] = u"caf\u00e9 cr\u00e8me \u4e2d\u6587 ok ok ok";
struct __attribute__((packed)) odd {
    char pad;
    char16_t text[24];
};
static const struct odd odd = {'!', u"odd-aligned UTF-16 text"};
static const char narrow[] = "narrow\tstring with a tab and a DEL \x7f here, then caf\xe9";

int main(int argc, char **argv) {
    (void)argv;
    printf("Hello, %s! %d\n", narrow, argc);
    const char16_t *w[] = {wide, mixed, odd.text};
    for (int i = 0; i < 3; i++)
        printf("%d: %u\n", i, (unsigned)w[i][argc]);
    return odd.pad == '!' ? 0 : 1;
}
