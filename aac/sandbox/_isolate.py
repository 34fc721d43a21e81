"""OS isolation of a sandbox worker (Linux, standard library + ctypes).

Modes, strongest first (the pool takes the first that works, see `pool.py`):
- `namespaces` (root): the zygote gets new mount, network, PID, IPC and UTS namespaces, every
  mount read-only; each child then gets its own PID namespace (from the fork) and mount and IPC namespaces, a
  private tmpfs on /tmp and a fresh /proc, and drops to uid/gid 65534. Folders
  that uid cannot enter on the way to the interpreter's import path (pyenv under a 0700 /root)
  are covered by a tmpfs holding only those entries, so imports work and the rest stays hidden.
- `userns` (unprivileged user namespaces): the same namespaces inside a user namespace, then all
  capabilities dropped (bounding set, securebits, capset).
- `landlock`: no namespaces; a Landlock domain allows writes only under the worker's private
  temp dir and (ABI >= 4) no TCP, (ABI >= 6) no signals or abstract sockets outside it.
- `rlimits`: only the limits below and a private working directory.
Every mode sets rlimits (address space, CPU, file size, open files, no core, no new processes),
no-new-privs and non-dumpable, and drops to uid 65534 when started as root.

`enter(mode)` runs in the zygote's supervisor before it forks the zygote; `setup_zygote(...)` in
the zygote, which forks each child with `fork_child(...)`; `setup_child(...)` in the child.
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import signal
import stat
import struct

MODES = ("namespaces", "userns", "landlock", "rlimits")
_NAMESPACED = ("namespaces", "userns")
NOBODY = 65534

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_NS_FLAGS = _CLONE_NEWNS | _CLONE_NEWUTS | _CLONE_NEWIPC | _CLONE_NEWPID | _CLONE_NEWNET

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_NOATIME, _MS_NODIRATIME, _MS_BIND, _MS_MOVE = 32, 1024, 2048, 4096, 8192
_MS_REC, _MS_PRIVATE, _MS_RELATIME, _MS_STRICTATIME = 1 << 14, 1 << 18, 1 << 21, 1 << 24
_MOUNT_OPTION_FLAGS = {"nosuid": _MS_NOSUID, "nodev": _MS_NODEV, "noexec": _MS_NOEXEC,
                       "noatime": _MS_NOATIME, "nodiratime": _MS_NODIRATIME, "relatime": _MS_RELATIME}

_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP = 1, 4, 24
_PR_SET_SECUREBITS, _PR_SET_NO_NEW_PRIVS = 28, 38
_SECBITS_LOCKED_NOROOT = 0x2F  # NOROOT, NO_SETUID_FIXUP (each locked), KEEP_CAPS locked off

_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_RULE_PATH_BENEATH = 1
_LL_FS_EXECUTE, _LL_FS_WRITE_FILE, _LL_FS_READ_FILE, _LL_FS_READ_DIR = 1, 2, 4, 8
# all filesystem rights each ABI knows (ABI 1: 13 rights; 2: REFER; 3: TRUNCATE; 5: IOCTL_DEV)
_LL_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
_LL_FILE_RIGHTS = _LL_FS_EXECUTE | _LL_FS_WRITE_FILE | _LL_FS_READ_FILE | (1 << 14) | (1 << 15)
_LL_NET_ALL = 3  # BIND_TCP | CONNECT_TCP (ABI >= 4)
_LL_SCOPE_ALL = 3  # ABSTRACT_UNIX_SOCKET | SIGNAL (ABI >= 6)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class IsolationError(OSError):
    """The requested isolation mode cannot be set up here."""


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise IsolationError(err, f"{what}: {os.strerror(err)}")
    return result


def _prctl(option: int, arg: int = 0) -> None:
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                       ctypes.c_ulong(0)), f"prctl({option})")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    args = [None if s is None else s.encode() for s in (source, target, fstype)]
    _check(_libc.mount(*args, ctypes.c_ulong(flags), None if data is None else data.encode()), f"mount {target}")


def landlock_abi() -> int:
    """Landlock ABI version of this kernel, 0 when unavailable."""
    try:
        abi = _libc.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                            ctypes.c_uint32(1))  # LANDLOCK_CREATE_RULESET_VERSION
    except (AttributeError, OSError):
        return 0
    return max(int(abi), 0)


# ---------------------------------------------------------------- supervisor (before fork)

def enter(mode: str) -> None:
    """Enter the namespaces of `mode` (the worker forked next is PID 1 of the new PID namespace)."""
    if mode not in MODES:
        raise IsolationError(0, f"unknown isolation mode {mode!r}")
    if mode == "namespaces":
        if os.geteuid() != 0:
            raise IsolationError(1, "namespaces: needs root")
        _check(_libc.unshare(ctypes.c_int(_NS_FLAGS)), "unshare")
    elif mode == "userns":
        if os.geteuid() == 0:
            _drop_to_nobody()  # RLIMIT_NPROC is not enforced for the real root
            _prctl(_PR_SET_DUMPABLE, 1)  # the uid change made /proc/self root-owned
        uid, gid = os.geteuid(), os.getegid()
        _check(_libc.unshare(ctypes.c_int(_NS_FLAGS | _CLONE_NEWUSER)), "unshare")
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
    elif mode == "landlock" and landlock_abi() < 1:
        raise IsolationError(38, "landlock: not available in this kernel")


# ---------------------------------------------------------------- worker (after fork)

def _mountinfo() -> list[tuple[str, set[str]]]:
    """(mount point, per-mount options) of every mount, from /proc/self/mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # \040 = space
            out.append((point, set(fields[5].split(","))))
    return out


def _closed_ancestor(path: str, uid: int) -> tuple[str, str] | None:
    """(directory, next component) where `uid` stops on its way to `path`: a directory it may
    not search (group bits ignored: the worker has no groups). None when the way is open."""
    parts = os.path.realpath(path).split("/")[1:]
    current = "/"
    for part in parts:
        st = os.stat(current)
        if not st.st_mode & (0o100 if st.st_uid == uid else 0o001):
            return current, part
        current = os.path.join(current, part)
    return None


def _expose(paths: list[str], uid: int) -> list[str]:
    """Make `paths` (the interpreter's import path) reachable for `uid` in this mount
    namespace: each closed directory on the way (e.g. a 0700 /root holding pyenv) is covered by a
    tmpfs that holds only the needed entries, bind-mounted back. Returns paths still unreachable."""
    for _ in range(8):  # one closed level per round
        closed: dict[str, set[str]] = {}
        for path in paths:
            hit = _closed_ancestor(path, uid)
            if hit is not None:
                closed.setdefault(hit[0], set()).add(hit[1])
        if not closed:
            return []
        for n, (directory, children) in enumerate(sorted(closed.items())):
            stashed: list[tuple[str, str, bool]] = []
            try:
                for i, child in enumerate(sorted(children)):
                    source = os.path.join(directory, child)
                    stash = f"/tmp/.aac-expose-{n}-{i}"
                    is_dir = os.path.isdir(source)
                    os.mkdir(stash) if is_dir else open(stash, "w").close()
                    stashed.append((stash, os.path.join(directory, child), is_dir))
                    _mount(source, stash, None, _MS_BIND | _MS_REC)
            except OSError:  # e.g. a user namespace may not enter the closed directory either
                for stash, _, is_dir in stashed:
                    _libc.umount2(stash.encode(), ctypes.c_int(2))  # MNT_DETACH; fails harmlessly if unmounted
                    os.rmdir(stash) if is_dir else os.unlink(stash)
                raise
            _mount("tmpfs", directory, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=755")
            for stash, target, is_dir in stashed:
                os.mkdir(target) if is_dir else open(target, "w").close()
                _mount(stash, target, None, _MS_MOVE)
                os.rmdir(stash) if is_dir else os.unlink(stash)
    return [p for p in paths if _closed_ancestor(p, uid) is not None]


def _pool_root(expose: list[str], uid: int) -> dict:
    """The zygote's view, shared by all its children: a private /tmp and /proc, `expose`
    reachable for `uid`, every other mount read-only (inside the new namespaces, as root)."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    # what the worker reads under /tmp (a checkout, venv or interpreter there) would vanish under
    # the private tmpfs: hold it by fd, then bind it back at the same place inside it (read-only below)
    held = [(path, os.open(path, os.O_PATH)) for path in _tmp_roots(expose)]
    _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=755")
    _bind_back(held)
    details: dict = {}
    if held:
        details["tmp_binds"] = [path for path, _ in held]
    try:
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        details["proc"] = "private"
    except IsolationError:
        details["proc"] = "host"  # e.g. a container that masks parts of /proc
    try:
        unreachable = _expose(expose, uid)
    except OSError as exc:
        unreachable = [p for p in expose if _closed_ancestor(p, uid) is not None]
        details["expose_error"] = str(exc)
    if unreachable:
        details["unreadable_import_paths"] = unreachable
    for point, opts in _mountinfo():
        if point == "/tmp" or "ro" in opts:
            continue
        flags = _MS_BIND | _MS_REMOUNT | _MS_RDONLY
        for opt, flag in _MOUNT_OPTION_FLAGS.items():
            if opt in opts:
                flags |= flag
        if not opts & {"noatime", "relatime"}:
            flags |= _MS_STRICTATIME
        try:
            _mount(None, point, None, flags)
        except IsolationError:
            pass  # mostly mounts hidden under others; checked below
    writable = sorted({p for p, opts in _mountinfo() if "rw" in opts and p != "/tmp"})
    if "/" in writable:
        raise IsolationError(1, "could not make / read-only")
    details["writable_hidden_mounts"] = len(writable)
    return details


def _tmp_roots(paths: list[str]) -> list[str]:
    """The outermost folders and files (a zip on the import path) of `paths` under /tmp, each as
    given and with its links resolved (a link into /tmp, or out of it): they need binding back
    into a private /tmp."""
    under = {q for p in paths for q in (os.path.abspath(p), os.path.realpath(p))
             if q.startswith("/tmp/") and os.path.exists(q)}
    roots: list[str] = []
    for path in sorted(under):
        if not any(path.startswith(root + "/") for root in roots):
            roots.append(path)
    return roots


def _bind_back(held: list[tuple[str, int]]) -> None:
    for path, fd in held:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.makedirs(path, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            open(path, "a").close()
        _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC)
        os.close(fd)


def _child_root(tmp_mb: int, tmp_roots: list[str]) -> dict:
    """A child's own /tmp (a fresh tmpfs, the zygote's binds under /tmp bound back read-only) and
    /proc (its PID namespace only), in its own mount namespace; before the uid drop."""
    held = [(path, os.open(path, os.O_PATH)) for path in tmp_roots]  # the zygote's read-only binds
    _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={tmp_mb}m,mode=1777")
    _bind_back(held)
    for path in tmp_roots:
        _mount(None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    details = {"tmp": f"tmpfs {tmp_mb} MiB"}
    try:
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    except IsolationError:
        details["proc"] = "zygote's"
    return details


def _drop_to_nobody() -> None:
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _drop_capabilities() -> None:
    """Root of a user namespace keeps no capability, now or after an exec."""
    _prctl(_PR_SET_SECUREBITS, _SECBITS_LOCKED_NOROOT)
    last_cap = 40
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            last_cap = int(fh.read())
    except OSError:
        pass
    for cap in range(last_cap + 1):
        _prctl(_PR_CAPBSET_DROP, cap)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def _landlock(tmp_dir: str) -> dict:
    abi = landlock_abi()
    fs = _LL_FS_BY_ABI.get(abi, _LL_FS_BY_ABI[5])
    net = _LL_NET_ALL if abi >= 4 else 0
    scoped = _LL_SCOPE_ALL if abi >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    rules = (("/", _LL_FS_EXECUTE | _LL_FS_READ_FILE | _LL_FS_READ_DIR), (tmp_dir, fs),
             ("/dev/null", _LL_FS_READ_FILE | _LL_FS_WRITE_FILE))
    _restrict_self(_landlock_ruleset(attr, rules, fs))
    return {"landlock_abi": abi, "tcp": "blocked" if net else "open", "signals": "scoped" if scoped else "open"}


def scope_ruleset(mode: str) -> int:
    """In the zygote, once: namespace modes' children share one (empty) network namespace, and
    with it the abstract unix socket namespace; a Landlock domain that only scopes (ABI >= 6)
    keeps each child's abstract sockets and signals to itself, for a few syscalls where a
    network namespace per child costs about a millisecond of CPU more per child. Returns the
    ruleset's fd each child enforces as a domain of its own (`setup_child`), or -1."""
    if mode not in _NAMESPACED or landlock_abi() < 6:
        return -1
    return _landlock_ruleset(struct.pack("=QQQ", 0, 0, _LL_SCOPE_ALL), (), 0)


def _landlock_ruleset(attr: bytes, rules: tuple[tuple[str, int], ...], fs: int) -> int:
    """A Landlock ruleset (fd) from `attr` (handled rights) that allows `rules` (path, rights)."""
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _check(_libc.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), buf, ctypes.c_size_t(len(attr)),
                                   ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for path, allowed in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                if os.path.isfile(path) or not os.path.isdir(path):
                    allowed &= _LL_FILE_RIGHTS
                rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed & fs, fd), 12)
                _check(_libc.syscall(ctypes.c_long(_SYS_LANDLOCK_ADD_RULE), ctypes.c_long(ruleset),
                                     ctypes.c_long(_LANDLOCK_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)),
                       f"landlock_add_rule {path}")
            finally:
                os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def _restrict_self(ruleset: int) -> None:
    """Enforce `ruleset` as a new Landlock domain of this process, then close it."""
    try:
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        _check(_libc.syscall(ctypes.c_long(_SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_long(ruleset), ctypes.c_uint32(0)),
               "landlock_restrict_self")
    finally:
        os.close(ruleset)


def cpu_lifetime_s(cpu_s: float) -> int:
    """Hard RLIMIT_CPU of a worker: its whole life; a worker retires at half of it."""
    return max(600, int(100 * cpu_s))


def setup_zygote(mode: str, import_paths: list[str]) -> dict:
    """Prepare the zygote's mount namespace (namespace modes; it stays privileged to set up each
    child); returns details for the report, whose "tmp_binds" (namespace modes) are the paths under
    /tmp to keep visible in each child. `import_paths` (what the worker reads: its import path, the
    interpreter's prefixes) must stay readable for the children."""
    details: dict = {"mode": mode}
    if mode in ("namespaces", "userns"):
        details.update(_pool_root(import_paths, NOBODY if mode == "namespaces" else os.geteuid()))
        details["network"] = "none (empty namespace)"
        details["pids"] = "private namespace per child"
    elif os.geteuid() == 0:
        unreachable = [p for p in import_paths if _closed_ancestor(p, NOBODY) is not None]
        if unreachable:
            details["unreadable_import_paths"] = unreachable
    return details


def own_pid_namespace(mode: str) -> int:
    """In the zygote: an fd of its PID namespace, to return to after each child's fork (-1 without namespaces)."""
    return os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC) if mode in _NAMESPACED else -1


def fork_child(mode: str, own_pidns: int) -> int:
    """`os.fork()`; in namespace modes the child is PID 1 of a new PID namespace while the zygote
    stays in its own (`own_pidns`): siblings cannot see or signal each other."""
    if mode not in _NAMESPACED:
        return os.fork()
    _check(_libc.unshare(ctypes.c_int(_CLONE_NEWPID)), "unshare")
    try:
        pid = os.fork()
    except BaseException:
        _check(_libc.setns(ctypes.c_int(own_pidns), ctypes.c_int(_CLONE_NEWPID)), "setns")
        raise
    if pid:
        _check(_libc.setns(ctypes.c_int(own_pidns), ctypes.c_int(_CLONE_NEWPID)), "setns")
    return pid


def setup_child(mode: str, tmp_dir: str, memory_mb: int, cpu_s: float, tmp_mb: int, fsize_mb: int, nofile: int,
                tmp_roots: list[str], scope: int = -1) -> dict:
    """Isolate the calling (child) process; returns details for the report. After this the
    process cannot create processes or threads. `tmp_dir` is its private writable directory
    (ignored for namespace modes, which use /tmp/work in a fresh tmpfs); `tmp_roots` are the
    zygote's binds under /tmp to keep visible (see `setup_zygote`); `scope` is the zygote's
    `scope_ruleset` (closed here)."""
    was_root = os.geteuid() == 0
    details: dict = {}
    if mode in _NAMESPACED:
        # its own mount and IPC namespaces (the PID one came with the fork, see `fork_child`)
        _check(_libc.unshare(ctypes.c_int(_CLONE_NEWNS | _CLONE_NEWIPC)), "unshare")
        details.update(_child_root(tmp_mb, tmp_roots))
        tmp_dir = "/tmp/work"  # a subfolder: bind points of import paths under /tmp stay out of sight
        os.mkdir(tmp_dir)
        os.chmod(tmp_dir, 0o1777)
    os.setsid()  # its own process group: kill(0, ...) reaches no sibling child
    os.chdir(tmp_dir)
    details["cwd"] = tmp_dir
    if mode == "userns":
        _drop_capabilities()
        details["capabilities"] = "none"
    elif was_root:
        _drop_to_nobody()
        details["uid"] = NOBODY
    if mode == "landlock":
        details.update(_landlock(tmp_dir))
    elif scope >= 0:
        _restrict_self(scope)
        details["abstract_sockets"] = "scoped per child"
    elif mode in _NAMESPACED:
        details["abstract_sockets"] = "shared by the pool's children (Landlock ABI < 6)"
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    _prctl(_PR_SET_DUMPABLE, 0)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
    mib = 1 << 20
    lifetime = cpu_lifetime_s(cpu_s)  # the worker moves its soft limit per call (see the worker)
    for res, limit in ((resource.RLIMIT_AS, memory_mb * mib), (resource.RLIMIT_CPU, lifetime),
                       (resource.RLIMIT_FSIZE, fsize_mb * mib), (resource.RLIMIT_NOFILE, nofile),
                       (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(res, (limit, limit))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # last: no fork, no threads from here on
    details["limits"] = {"memory_mb": memory_mb, "cpu_s_per_call": cpu_s, "cpu_s_lifetime": lifetime,
                         "fsize_mb": fsize_mb, "nofile": nofile, "nproc": 0}
    return details
