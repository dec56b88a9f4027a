#include <stdio.h>
int main(int argc, char **argv) { puts("tezgah: under construction"); return 0; }
