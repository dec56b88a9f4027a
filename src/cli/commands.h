/* One function per subcommand: argc/argv start at the subcommand's name. Return the exit
 * code (0 ok, 1 error with a one-line message on stderr, usage errors included). */
#ifndef TZ_CLI_COMMANDS_H
#define TZ_CLI_COMMANDS_H
int tz_cmd_train(int argc, char **argv);
int tz_cmd_sample(int argc, char **argv);
int tz_cmd_eval(int argc, char **argv);
int tz_cmd_convert(int argc, char **argv);
int tz_cmd_logits(int argc, char **argv);
int tz_cmd_tokenize(int argc, char **argv);
int tz_cmd_encode(int argc, char **argv);
int tz_cmd_decode(int argc, char **argv);
int tz_cmd_tokenizer(int argc, char **argv);
int tz_cmd_info(int argc, char **argv);
int tz_cmd_plot(int argc, char **argv);
int tz_cmd_env(int argc, char **argv);
/* train --nproc N (launch.c): run N ranks of `train argv...` on this machine (cpu: through
 * mpirun as a watched child; cuda: forked ranks with NCCL). run_dir: the default run directory
 * this process chose (passed to every rank as --run-dir), or NULL. Returns the exit code. */
int tz_launch_nproc(int nproc, const char *backend, const char *run_dir, int argc, char **argv);
/* How the help texts (tezgah --help; train, sample and eval's --backend) and `info` name the
 * CUDA backend: in a build without it, "cuda (not in this build)", as `--backend cuda` then
 * answers "this tezgah was built without CUDA" (backend_cuda_stub.c): the helps listed it as
 * if it could be chosen. TZ_HAVE_CUDA: CMakeLists.txt, where the CUDA backend is compiled. */
#ifdef TZ_HAVE_CUDA
#define TZ_HELP_CUDA "cuda"
#else
#define TZ_HELP_CUDA "cuda (not in this build)"
#endif
#endif
