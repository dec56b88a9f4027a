/* A stand-in for a Dawn build, for tests/test_webgpu_load.c: functions named like Dawn's entry
 * points, static (in the ELF .symtab only, as in dawn.node), but not the real ones and not the
 * pinned build. Built twice: with the node ABI's marker (wgpuGetInstanceLimits) and without
 * (TZ_FAKE_NO_MARKER), and a stripped copy. Never called. */
__attribute__((used)) static void wgpuCreateInstance(void) {}
__attribute__((used)) static void dawnProcSetProcs(void) {}
#ifndef TZ_FAKE_NO_MARKER
__attribute__((used)) static void wgpuGetInstanceLimits(void) {}
#endif
int tz_fake_dawn(void);
int tz_fake_dawn(void) { return 1; }
