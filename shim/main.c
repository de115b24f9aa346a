/* Placeholder entry point; the CLI issue replaces this with the real one. */
#include <stdio.h>
int main(void) { fputs("tollgate: CLI not built yet\n", stderr); return 1; }
