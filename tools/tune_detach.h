#pragma once
// `ktune tune` on a GPU ends for its caller when its report is out, not when the kernel has torn
// its GPU side down: after the last line, the exit of a process holding a CUDA context (the driver
// freeing its memory and context, with the isolation worker's beside it) took 90-180 ms of a warm
// 4096^3 tuning's 0.93-1.2 s on the GPU machine (bench/NOTES.md, issue 34). So the command forks
// before it opens anything: the child tunes; the parent waits for the child's exit status on a
// pipe, which the child sends, with its standard streams closed, right before it exits; the parent
// then exits with it, and the child's exit finishes on its own. A child that dies without sending
// it is waited for as before (its signal or status is the parent's). A signal that kills the
// parent kills the child too (PR_SET_PDEATHSIG), as it killed the one process before.
namespace ktune::cli {

// Forks, returning in the child only; the parent never returns (it exits with the child's
// status). Where fork fails, returns in this one process (nothing changes). Call it while the
// process has one thread.
void detachTeardown();
// In the child of detachTeardown: flushes and closes stdout and stderr (onto /dev/null) and hands
// rc to the parent. Does nothing in a process that did not fork.
void reportExitStatus(int rc);

}  // namespace ktune::cli
