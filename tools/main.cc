#include <cstdio>
int main() { std::puts("ktune: CLI not built yet"); return 1; }
