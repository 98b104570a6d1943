"""Confine a worker process that runs untrusted solution code, with Linux namespaces.

A worker calls :func:`enter_sandbox` first thing, before it builds or imports any solution code. The call
creates a user, mount, pid and IPC namespace (``unshare``) and forks once:

* The calling process becomes the *waiter*. It never returns: it closes every file descriptor it holds
  (0-2 point at /dev/null afterwards) and waits. When the child exits, the waiter exits the same way (same
  status, or killed by the same signal). On any signal that would end it (SIGTERM, SIGHUP, SIGUSR1, ...: all
  but SIGINT, whose Ctrl-C reaches the worker itself, and those that stop or are ignored by default), and
  when its own parent dies (PR_SET_PDEATHSIG=SIGTERM), it SIGKILLs the child, reaps it and dies by that
  signal. The parent's ``multiprocessing.Process`` refers to the waiter, so ``exitcode``, ``join`` and
  ``sentinel`` behave as for any worker (fork and forkserver start methods).
* The child is pid 1 of the new pid namespace and goes on as the worker. When it dies, the kernel kills
  every process of the namespace, however detached (double fork, ``setsid``, cleared PDEATHSIG).

The mounts are made in this order: the mount namespace is made private; with ``confine_writes``, the whole
filesystem read-only, the ``writable`` directories, the private /dev/shm; the ``read_only`` paths; the
``hidden`` ones; last the fresh /proc (mounted before, it would be made read-only with the rest; the old
/proc, though read-only now, still lets it be mounted, as only a mount made read-only in a more privileged
namespace would not). Every mount that could not be made as asked is named in ``Isolation.missing``.

Guaranteed once :func:`enter_sandbox` returns an :class:`Isolation` that is ``complete``:

* no process outside the namespace can be seen (a fresh /proc) or signalled (the worker leads its own
  session, so not even ``kill(0, sig)`` reaches the process group it came from);
* with ``confine_writes``, nothing but the ``writable`` directories can be written, created in, renamed or
  unlinked (EROFS): every mount of the namespace ("/" and all below it) is remounted read-only in place,
  then each ``writable`` directory is bound writable over itself (mounts below it stay read-only). Device
  nodes stay usable (a read-only mount does not stop writes to /dev/null or /dev/nvidia*: they go to the
  driver). /dev/shm becomes an empty tmpfs of the namespace's own (nosuid, nodev), so the worker's POSIX
  shared memory and semaphores are invisible outside and vanish with it;
* the ``read_only`` paths (recursively, with the mounts below them) cannot be written, created in, renamed
  or unlinked (EROFS), also through the current directory when it lies below one of them (they also make a
  path inside a ``writable`` directory read-only);
* the ``hidden`` directories show an empty read-only tmpfs: their files and unix sockets cannot be reached
  (a ``writable`` directory at or below a ``read_only`` or ``hidden`` path is refused by ``SandboxPolicy``);
* the worker has no capabilities left (bounding, ambient, permitted, effective and inheritable sets are
  empty) and no_new_privs is set, so neither it nor what it runs can undo the mounts, and execve cannot
  gain privileges (setuid binaries, file capabilities);
* the whole namespace dies when the waiter is terminated (:func:`terminate_sandboxed`) or its parent dies.

Not guaranteed:

* SIGKILL sent straight to the waiter: it cannot take the namespace down then. The worker holds
  PR_SET_PDEATHSIG=SIGKILL as a second line, but solution code can clear that. Stop a worker with
  :func:`terminate_sandboxed`, not ``Process.kill()``.
* File descriptors opened before the call keep the access they had: a pipe to the parent stays open, and a
  directory fd opened below a read-only path still writes through the old, writable mount.
* Without ``confine_writes``, everything not listed stays writable and shared (/tmp, /dev/shm, the home
  directory, the build cache unless listed); a read-only *file* protects its content, and the directory
  that holds it stays writable unless listed. With it, the ``writable`` directories are shared with
  whatever else can write them outside, and a mount point the process could not even look up while it was
  set up (EACCES: a tracefs below the host's 0700 debugfs, for a user who is not root) is left as it is,
  since the process never gains the access to reach it later.
* There is no network namespace (abstract unix sockets and the network are reachable); there are no
  resource limits (memory, processes, CPU time; a writable directory or the private /dev/shm can be filled).
* pid 1 of a namespace ignores signals with a default disposition that come from inside the namespace:
  ``os.kill(os.getpid(), SIGTERM)`` or ``abort()`` in the worker does not kill it the usual way (abort ends
  in SIGSEGV); faults (SIGSEGV, SIGBUS, SIGFPE) and signals from outside behave as usual. Orphans inside the
  namespace are re-parented to the worker, which reaps only its own children.

When the namespaces cannot be created (unprivileged user namespaces disabled, a seccomp filter such as
Docker's default one, a multi-threaded caller, not Linux), :func:`enter_sandbox` falls back to what a plain
process can do (PR_SET_PDEATHSIG=SIGKILL, PR_SET_CHILD_SUBREAPER, ``setsid``, no_new_privs, dropping
capabilities) and says in ``Isolation.missing`` what is not in force and why.
"""

from flashinfer_bench.bench.worker.sandbox.enter import enter_sandbox
from flashinfer_bench.bench.worker.sandbox.limits import ResourceLimits
from flashinfer_bench.bench.worker.sandbox.policy import Isolation, SandboxError, SandboxPolicy
from flashinfer_bench.bench.worker.sandbox.probe import probe_isolation
from flashinfer_bench.bench.worker.sandbox.terminate import terminate_sandboxed

__all__ = ["Isolation", "ResourceLimits", "SandboxError", "SandboxPolicy", "enter_sandbox", "probe_isolation",
           "terminate_sandboxed"]
