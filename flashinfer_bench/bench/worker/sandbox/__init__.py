"""Confine a worker process that runs untrusted solution code, with Linux namespaces.

A worker calls :func:`enter_sandbox` first thing, before it builds or imports any solution code. The call moves
it into the ``cgroups`` its parent made, creates a user, mount, pid, IPC and network namespace (``unshare``)
and forks once:

* The calling process becomes the *waiter*. It never returns: it closes every file descriptor it holds
  (0-2 point at /dev/null afterwards) and waits. When the child exits, the waiter exits the same way (same
  status, or killed by the same signal; a child SIGKILLed at its CPU-time limit counts as killed by SIGXCPU).
  On any signal that would end it (SIGTERM, SIGHUP, SIGUSR1, ...: all but SIGINT, whose Ctrl-C reaches the
  worker itself, and those that stop or are ignored by default), and when its own parent dies
  (PR_SET_PDEATHSIG=SIGTERM), it SIGKILLs the child, reaps it and dies by that signal. The parent's
  ``multiprocessing.Process`` refers to the waiter, so ``exitcode``, ``join`` and ``sentinel`` behave as for
  any worker (fork and forkserver start methods).
* The child is pid 1 of the new pid namespace and goes on as the worker. When it dies, the kernel kills
  every process of the namespace, however detached (double fork, ``setsid``, cleared PDEATHSIG).

The child makes the mount namespace private, then, with ``confine_writes``, switches to a new root that shows
only the system's directories, the ``read_only`` and ``writable`` paths, a minimal /dev, a private /dev/shm,
a fresh /proc with kernel settings read-only and secrets masked, and a read-only /sys (``view.py``); without
it, it binds the ``read_only`` paths read-only and hides the ``hidden`` ones in place, then mounts a fresh
/proc. It brings up the loopback device of its network namespace, sets its rlimits, no_new_privs, drops every
capability and, with ``keep_fds``, closes every descriptor but those. Every step that could not be made as
asked is named in ``Isolation.missing``.

Guaranteed once :func:`enter_sandbox` returns an :class:`Isolation` that is ``complete``:

* no process outside the namespace can be seen (a fresh /proc) or signalled (the worker leads its own
  session, so not even ``kill(0, sig)`` reaches the process group it came from);
* no network but its own loopback: no host or cluster port, no abstract unix socket outside the namespace;
* with ``confine_writes``, nothing outside the view exists for it: no directory, unix socket, FIFO or device
  node of the host but the character devices ``view.DEV_NODES`` and the GPU's nodes; nothing but the
  ``writable`` directories and /dev/shm can be written, created in, renamed or unlinked (EROFS), the root and
  /dev included; /proc/sys, /proc/sysrq-trigger and the like and /sys are read-only, so uid 0 (which the
  user namespace maps to the caller's uid, root included) changes no kernel setting; /dev/shm is an empty
  tmpfs of the namespace's own;
* the ``read_only`` paths (recursively, with the mounts below them) cannot be written, created in, renamed
  or unlinked (EROFS), also through the current directory when it lies below one of them (they also make a
  path inside a ``writable`` directory read-only);
* the ``hidden`` directories show an empty read-only tmpfs: their files and unix sockets cannot be reached
  (a ``writable`` directory at or below a ``read_only`` or ``hidden`` path is refused by ``SandboxPolicy``);
* with ``keep_fds``, no descriptor of the caller's but those (multiprocessing's resource tracker forgotten);
* the rlimits of ``limits`` are hard limits the worker cannot raise; the cgroups bind every process of the
  namespace and are not in its view, so it cannot leave them;
* the worker has no capabilities left (bounding, ambient, permitted, effective and inheritable sets are
  empty) and no_new_privs is set, so neither it nor what it runs can undo the mounts, and execve cannot
  gain privileges (setuid binaries, file capabilities);
* the whole namespace dies when the waiter is terminated (:func:`terminate_sandboxed`) or its parent dies.

Not guaranteed:

* SIGKILL sent straight to the waiter: it cannot take the namespace down then. The worker holds
  PR_SET_PDEATHSIG=SIGKILL as a second line, but solution code can clear that. Stop a worker with
  :func:`terminate_sandboxed`, not ``Process.kill()``.
* Without ``keep_fds``, descriptors opened before the call keep the access they had.
* A unix socket inside a shown directory can be connected to (a read-only mount does not stop that): show
  only directories no program puts sockets in (the system's and Python's installs, blobs).
* Uid 0 stays uid 0 for what is in view (a user namespace can map only the caller's own id without
  CAP_SETUID outside), and its kernel keyrings are the host root's.
* pid 1 of a namespace ignores signals with a default disposition that come from inside the namespace:
  ``os.kill(os.getpid(), SIGTERM)`` or ``abort()`` in the worker does not kill it the usual way (abort ends
  in SIGSEGV), nor does SIGXFSZ (a write past the file-size limit fails with EFBIG instead); faults
  (SIGSEGV, SIGBUS, SIGFPE) and signals from outside behave as usual. Orphans inside the namespace are
  re-parented to the worker, which reaps only its own children.

When the namespaces cannot be created (unprivileged user namespaces disabled, a seccomp filter such as
Docker's default one, a multi-threaded caller, not Linux), :func:`enter_sandbox` falls back to what a plain
process can do (PR_SET_PDEATHSIG=SIGKILL, PR_SET_CHILD_SUBREAPER, ``setsid``, no_new_privs, dropping
capabilities, rlimits, closing descriptors) and says in ``Isolation.missing`` what is not in force and why.
"""

from flashinfer_bench.bench.worker.sandbox.enter import enter_sandbox
from flashinfer_bench.bench.worker.sandbox.limits import ResourceLimits
from flashinfer_bench.bench.worker.sandbox.policy import Isolation, SandboxError, SandboxPolicy
from flashinfer_bench.bench.worker.sandbox.probe import probe_isolation
from flashinfer_bench.bench.worker.sandbox.terminate import terminate_sandboxed

__all__ = ["Isolation", "ResourceLimits", "SandboxError", "SandboxPolicy", "enter_sandbox", "probe_isolation",
           "terminate_sandboxed"]
