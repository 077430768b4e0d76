"""The service supervisor of `Sandbox::run_service` (`service.rs`).

Run by the sandbox in one call, with its own interpreter, as

    python -I -B -c <this file>

and handed its plan (JSON) on standard input. It makes itself
non-dumpable first, so that code of the same user (the service) can
neither ptrace it nor open its `/proc/<pid>/fd`, `environ` or `mem`;
then it starts the service in a session of its own, with its output to a
log file and every other descriptor closed, waits until it is ready,
makes the plan's HTTP requests, runs the tests, stops everything and
prints ONE JSON object after a marker line on its own standard output,
which only the sandbox holds. Nothing it reports passes through a file
the service could write.

Tests (`pytest` form) run in an interpreter the caller chose, as
`python -I -B -u -c LAUNCHER`: the launcher makes itself non-dumpable,
loads pytest and the plugins of that interpreter's own environment, then
APPENDS the untrusted directories (the repository, the service's
site-packages) to `sys.path` without processing their `.pth` files, and
runs pytest in-process with the caller's rootdir and ini, no cache, no
plugin autoloading, and the JUnit report written to a pipe this
supervisor reads.

Every wait has a deadline, every loop a bound, every text kept is a tail
or an excerpt.
"""

import ctypes
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

MARKER = "=====SANDBOX-SERVICE-REPORT====="
MARK = "SANDBOX_SERVICE_MARK"
PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
PLAN_MAX = 8 << 20
LOG_TAIL = 4096
CONSOLE_TAIL = 256 << 10
JUNIT_MAX = 4 << 20
BODY_EXCERPT = 600
BODY_MAX = 1 << 20
MAX_KEYS = 256
KEY_MAX = 200
ERROR_MAX = 4000
COMMAND_MAX = 200
POLL = 0.2
HEALTH_TIMEOUT = 1.0
READ_CHUNK = 65536
# Rounds of killing what escaped the process group: each round may find
# the children of the processes the previous one killed.
SURVIVOR_ROUNDS = 5

# Runs in the test interpreter; argv[1] is its configuration (JSON).
LAUNCHER = r'''
import ctypes, os, sys
# pytest captures descriptors 1 and 2 while tests run: refusals go to a
# copy of the console made before, so they are seen.
NOTE = os.dup(2)
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(4, 0, 0, 0, 0) != 0 or libc.prctl(3, 0, 0, 0, 0) != 0:
    sys.exit("launcher: cannot make the test process non-dumpable")
import json
cfg = json.loads(sys.argv[1])
import importlib, importlib.machinery, importlib.metadata
import pytest
# The plugins of this environment (the caller's), found and imported before
# anything untrusted is on the path; autoloading stays off, so a plugin the
# service's environment declares is never loaded.
plugins = []
for ep in importlib.metadata.entry_points(group="pytest11"):
    try:
        ep.load()
        plugins.append(ep.name)
    except Exception as e:
        print("launcher: plugin %s does not load: %s" % (ep.name, e), file=sys.stderr)
untrusted = [os.path.abspath(p) for p in cfg["sys_path_extra"]]
# Appended, never prepended, and without site.addsitedir: the caller's
# packages win every name, and no .pth file of the service's runs.
sys.path.extend(untrusted)
UNTRUSTED = tuple(p.rstrip("/") + "/" for p in untrusted)
TRUSTED_CODE = tuple({os.path.abspath(p).rstrip("/") + "/" for p in (sys.prefix, sys.exec_prefix)})
IMPORTLIB = os.path.dirname(importlib.__file__) + "/"
# pytest functions that import a name on behalf of the test that asked.
ON_BEHALF = {"importorskip", "resolve", "derive_importpath", "annotated_getattr"}

def importer():
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if name.startswith("<frozen") or name.startswith(IMPORTLIB) or (
            f.f_code.co_name in ON_BEHALF and name.startswith(TRUSTED_CODE)
        ):
            f = f.f_back
            continue
        return name
    return ""

class Guard:
    """The caller's packages (pytest, requests, ...) never import a module
    that only the untrusted directories have: an optional dependency they
    try (`simplejson`, say) would otherwise be the service's code running
    inside the test process. The tests and the repository's code import
    from there as they please."""

    def find_spec(self, name, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return None
        places = [spec.origin] if spec.has_location and spec.origin else list(
            spec.submodule_search_locations or []
        )
        # The caller's environment may sit inside an untrusted directory
        # (a virtualenv in the repository): it stays the caller's.
        if not places or not all(
            p.startswith(UNTRUSTED) and not p.startswith(TRUSTED_CODE) for p in places
        ):
            return None
        who = importer()
        if who.startswith(TRUSTED_CODE):
            os.write(NOTE, ("launcher: refused %s (from %s) to %s\n" % (name, places[0], who)).encode())
            raise ModuleNotFoundError("No module named %r" % name, name=name)
        return None

sys.meta_path.insert(0, Guard())
args = [
    "-p", "no:cacheprovider",
    "--rootdir", cfg["rootdir"],
    "-c", cfg["inifile"],
    "--confcutdir", cfg["rootdir"],
    "--junitxml", "/proc/self/fd/%d" % cfg["junit_fd"],
]
for name in plugins:
    args += ["-p", name]
args += cfg["args"] + cfg["test_paths"]
sys.exit(int(pytest.main(args)))
'''


class Stopped(Exception):
    """SIGTERM (the sandbox call's limit): unwind, stop, report."""


def on_term(signum, _frame):
    raise Stopped("the supervisor was stopped by signal %d (the sandbox call's time limit)" % signum)


def now_ms(since):
    return int((time.monotonic() - since) * 1000)


def cut(text, limit):
    return text if len(text) <= limit else text[:limit] + "…"


def tail_text(data, limit):
    text = data[-limit:].decode("utf-8", "replace")
    return "…" + text if len(data) > limit else text


def non_dumpable():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")
    if libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(0, "the supervisor is still dumpable")


def fd_tail(fd, limit=LOG_TAIL):
    """The end of the file open at `fd` (the service's log, read through the
    supervisor's own descriptor: no path the service could swap)."""
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - limit)
        data = os.pread(fd, limit, start)
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    return "…" + text if start > 0 else text


def listening(port):
    """The loopback address on which `port` accepts a connection, if any."""
    for host in ("127.0.0.1", "::1"):
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return host
        except OSError:
            pass
    return None


def running_since(pid):
    """The start time (clock ticks after boot) of `pid` while it runs; None
    once it has ended or is a zombie. The start time tells a process from a
    later one given the same pid."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read(4096)
    except OSError:
        return None
    # The fields follow the command name, which may itself hold ") ": the
    # state first, the start time 20th.
    rest = stat.rpartition(b")")[2].split()
    if len(rest) < 20 or rest[0] in (b"Z", b"X"):
        return None
    return rest[19]


def command_of(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read(4096)
    except OSError:
        cmdline = b""
    return cut(cmdline.replace(b"\0", b" ").decode("utf-8", "replace").strip(), COMMAND_MAX)


class Processes:
    """The service's processes: in a PID namespace of the call's own, every
    process but its init and this supervisor (and the test run it is
    waiting for); otherwise those whose environment carries the run's mark,
    which reaches the descendants that left the process group.

    A process once seen with the mark stays the service's for as long as it
    runs, whatever its environment shows later: while a process execs, the
    kernel shows it no environment at all, and a daemon may exec with a
    cleared one."""

    def __init__(self, marker, namespace):
        self.needle = ("%s=%s" % (MARK, marker)).encode()
        self.namespace = namespace
        self.exclude = {1, os.getpid()}
        # pid -> start time of the processes seen with the mark.
        self.marked = {}

    def live(self):
        found = []
        try:
            names = os.listdir("/proc")
        except OSError:
            return found
        for name in names[:100000]:
            if not name.isdigit():
                continue
            pid = int(name)
            if pid in self.exclude:
                continue
            since = running_since(pid)
            if since is None:
                continue
            if not self.namespace and self.marked.get(pid) != since:
                try:
                    with open("/proc/%d/environ" % pid, "rb") as f:
                        environ = f.read(1 << 20)
                except OSError:
                    continue
                if self.needle not in environ.split(b"\0"):
                    continue
                self.marked[pid] = since
            found.append((pid, command_of(pid)))
        return found

    def appear(self, grace):
        """Whether one lives, looked for up to `grace` seconds: a child
        forked just before its parent returned may not show at once."""
        end = time.monotonic() + grace
        while True:
            if self.live():
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.05)


def signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def signal_pid(pid, sig):
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def child_env(extra, port, marker):
    env = dict(os.environ)
    env.update(extra)
    env.update({"PORT": str(port), MARK: marker})
    return env


def start_service(service, port, marker, log_fd):
    return subprocess.Popen(
        service["argv"],
        cwd=service["cwd"],
        stdin=subprocess.DEVNULL,
        stdout=log_fd,
        stderr=subprocess.STDOUT,
        close_fds=True,
        start_new_session=True,
        env=child_env(service["env"], port, marker),
    )


def http_get_status(host, port, path, timeout):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path if path.startswith("/") else "/" + path, headers={"Connection": "close"})
        response = conn.getresponse()
        response.read1(READ_CHUNK)
        return response.status
    except Exception:  # the service's faults are observations
        return None
    finally:
        conn.close()


def healthy(port, path):
    """`curl -sf --max-time 1 http://localhost:PORT/path`: a status below 400."""
    for host in ("127.0.0.1", "::1"):
        status = http_get_status(host, port, path, HEALTH_TIMEOUT)
        if status is not None:
            return host if status < 400 else None
    return None


def wait_ready(proc, plan, procs, report):
    """Fills `readiness` (and `survivors`); the loopback host that answered."""
    port = plan["port"]
    begun = time.monotonic()
    deadline = begun + plan["startup_timeout"]
    started_ended = False
    while True:
        code = proc.poll()
        if code is not None and not started_ended:
            started_ended = True
            if procs.appear(0.5):
                report["foreground"] = False
                report["survivors"] = ["%d %s" % p for p in procs.live()]
            if not (plan["wait_for_daemons"] and report["survivors"]):
                report["readiness"] = {
                    "state": "exited",
                    "code": code if code >= 0 else None,
                    "after_ms": now_ms(begun),
                }
                return None
        for path in plan["health_paths"]:
            host = healthy(port, path)
            if host is not None:
                report["readiness"] = {"state": "health", "path": path, "after_ms": now_ms(begun)}
                return host
        host = listening(port)
        if host is not None:
            report["readiness"] = {"state": "listening", "after_ms": now_ms(begun)}
            return host
        if time.monotonic() >= deadline:
            code = proc.poll()
            if code is None:
                report["readiness"] = {"state": "alive_not_listening", "after_ms": now_ms(begun)}
            elif procs.live():
                report["readiness"] = {"state": "never_listened", "after_ms": now_ms(begun)}
            else:
                report["readiness"] = {
                    "state": "exited",
                    "code": code if code >= 0 else None,
                    "after_ms": now_ms(begun),
                }
            return None
        if started_ended and not procs.live():
            # What the start command left has ended too: nothing will answer.
            report["readiness"] = {
                "state": "exited",
                "code": code if code is not None and code >= 0 else None,
                "after_ms": now_ms(begun),
            }
            return None
        time.sleep(POLL)


def call(host, port, request):
    """One request; what came back, bounded. Never raises for the service's faults."""
    timeout = request["timeout"]
    seen = {"status": None, "body_excerpt": "", "json": "none", "keys": [], "error": None}
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    expired = threading.Event()
    sockets = []

    def expire():
        # Unblocks a read stuck on a service that sends slowly, so that the
        # request ends at its deadline and not at a multiple of it.
        expired.set()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        conn.connect()
        sockets.append(conn.sock)
        headers = {"Accept": "application/json", "Connection": "close"}
        body = None
        if request["body"] is not None:
            body = request["body"].encode("utf-8")
            headers["Content-Type"] = "application/json"
        path = request["path"] if request["path"].startswith("/") else "/" + request["path"]
        conn.request(request["method"], path, body=body, headers=headers)
        response = conn.getresponse()
        seen["status"] = response.status
        data = b""
        complete = False
        for _ in range(BODY_MAX // READ_CHUNK + 2):
            chunk = response.read1(READ_CHUNK)
            if not chunk:
                complete = not expired.is_set()
                break
            data += chunk
            if len(data) > BODY_MAX:
                seen["json"] = "too_large"
                break
        seen["body_excerpt"] = cut(data.decode("utf-8", "replace"), BODY_EXCERPT)
        if expired.is_set():
            seen["error"] = "the response was not complete within %.1f s" % timeout
        elif complete and data:
            describe_json(data, seen)
    except Exception as e:  # the service's faults are observations
        if expired.is_set():
            seen["error"] = "no complete response within %.1f s" % timeout
        else:
            seen["error"] = cut("%s: %s" % (type(e).__name__, e), 300)
    finally:
        timer.cancel()
        conn.close()
    return seen


def describe_json(data, seen):
    try:
        value = json.loads(data.decode("utf-8"))
    except Exception:  # not JSON, or nested too deep to parse
        return
    if isinstance(value, dict):
        seen["json"] = "object"
        seen["keys"] = [cut(str(k), KEY_MAX) for k in list(value)[:MAX_KEYS]]
    elif isinstance(value, list):
        seen["json"] = "array"
    else:
        seen["json"] = "scalar"


class Reader(threading.Thread):
    """Drains a pipe: keeps its tail, or its head up to a cap (and then
    only counts), so that a writer never blocks on it."""

    def __init__(self, fd, keep, tail):
        super().__init__(daemon=True)
        self.fd = fd
        self.keep = keep
        self.tail = tail
        self.data = bytearray()
        self.total = 0

    def run(self):
        try:
            while True:
                chunk = os.read(self.fd, READ_CHUNK)
                if not chunk:
                    break
                self.total += len(chunk)
                if self.tail:
                    self.data += chunk
                    if len(self.data) > 2 * self.keep:
                        del self.data[: len(self.data) - self.keep]
                elif len(self.data) < self.keep + 1:
                    self.data += chunk[: self.keep + 1 - len(self.data)]
        except OSError:
            pass


def stop_group(proc, grace):
    """SIGTERM the process group of `proc`, SIGKILL what is left after `grace`."""
    signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    signal_group(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass


def run_tests(test, port, marker, procs):
    """Runs the test command; its exit, console tail and (pytest) JUnit report."""
    env = child_env(test["env"], port, marker)
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(name, None)
    console_r, console_w = os.pipe()
    junit_r = junit_w = None
    pass_fds = ()
    if test["kind"] == "pytest":
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        junit_r, junit_w = os.pipe()
        pass_fds = (junit_w,)
        config = {
            "sys_path_extra": test["sys_path_extra"],
            "rootdir": test["rootdir"],
            "inifile": test["inifile"],
            "test_paths": test["test_paths"],
            "args": test["args"],
            "junit_fd": junit_w,
        }
        argv = [test["interpreter"], "-I", "-B", "-u", "-c", LAUNCHER, json.dumps(config)]
    else:
        argv = test["argv"]
    begun = time.monotonic()
    readers = [Reader(console_r, CONSOLE_TAIL, True)]
    if junit_r is not None:
        readers.append(Reader(junit_r, JUNIT_MAX, False))
    try:
        proc = subprocess.Popen(
            argv,
            cwd=test["cwd"],
            stdin=subprocess.DEVNULL,
            stdout=console_w,
            stderr=console_w,
            close_fds=True,
            pass_fds=pass_fds,
            start_new_session=True,
            env=env,
        )
    except OSError as e:
        for fd in (console_r, console_w, junit_r, junit_w):
            if fd is not None:
                os.close(fd)
        return {
            "exit_code": None,
            "timed_out": False,
            "console_tail": cut("cannot start %s: %s" % (argv[0], e), ERROR_MAX),
            "junit_xml": None,
            "junit_problem": "the test command did not start",
            "ms": now_ms(begun),
        }
    procs.exclude.add(proc.pid)
    for fd in (console_w, junit_w):
        if fd is not None:
            os.close(fd)
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        proc.wait(timeout=test["timeout"])
    except subprocess.TimeoutExpired:
        timed_out = True
    # And what the tests started and left running in their group.
    stop_group(proc, 1.0)
    procs.exclude.discard(proc.pid)
    for reader in readers:
        # A descendant that left the group may hold a pipe open: stop
        # waiting for it rather than hang.
        reader.join(2.0)
    code = proc.returncode
    junit_xml = None
    junit_problem = None
    if junit_r is not None:
        junit = readers[1]
        if junit.total > JUNIT_MAX:
            junit_problem = "the JUnit report is larger than %d bytes" % JUNIT_MAX
        elif junit.total == 0:
            junit_problem = "pytest wrote no JUnit report"
        else:
            junit_xml = bytes(junit.data).decode("utf-8", "replace")
    return {
        "exit_code": None if timed_out or code is None or code < 0 else code,
        "timed_out": timed_out,
        "console_tail": tail_text(bytes(readers[0].data), CONSOLE_TAIL),
        "junit_xml": junit_xml,
        "junit_problem": junit_problem,
        "ms": now_ms(begun),
    }


def gone(proc, procs, grace):
    """Whether the start command and every process of the service end within `grace`."""
    end = time.monotonic() + grace
    while True:
        if (proc is None or proc.poll() is not None) and not procs.live():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


def stop(proc, procs, grace, report):
    """Stops the service and whatever it left; lists what outlived it.

    Listed in `leftovers`: what still ran after the start command had
    returned (a daemon, which also makes the service not a foreground
    one), and what survived the group's SIGTERM and SIGKILL.
    """
    leftovers = report["leftovers"]
    noted = set()

    def note(pid, command):
        if pid not in noted:
            noted.add(pid)
            leftovers.append(("%d %s" % (pid, command)).strip())

    if proc is not None and proc.poll() is not None:
        for pid, command in procs.live():
            report["foreground"] = False
            note(pid, command)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc is not None:
            signal_group(proc.pid, sig)
        for pid in noted:
            signal_pid(pid, sig)
        if gone(proc, procs, grace if sig == signal.SIGTERM else 1.0):
            break
    for _ in range(SURVIVOR_ROUNDS):
        rest = procs.live()
        if not rest:
            break
        for pid, command in rest:
            note(pid, command)
            signal_pid(pid, signal.SIGKILL)
        time.sleep(0.1)
    if proc is not None:
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass


def session(plan, report, state, procs):
    port = plan["port"]
    if listening(port) is not None:
        report["readiness"] = {"state": "port_busy"}
        return
    service = plan["service"]
    if service is None:
        report["readiness"] = {"state": "nothing_to_start"}
    else:
        home = os.environ.get("HOME") or "/tmp"
        path = os.path.join(home, ".service-%s.log" % secrets.token_hex(8))
        state["log_fd"] = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        state["log_path"] = path
        state["proc"] = start_service(service, port, state["marker"], state["log_fd"])
        host = wait_ready(state["proc"], plan, procs, report)
        if host is not None:
            for request in plan["requests"]:
                report["observations"].append(call(host, port, request))
    if plan["tests"] is not None:
        report["tests"] = run_tests(plan["tests"], port, state["marker"], procs)


def read_plan():
    data = sys.stdin.buffer.read(PLAN_MAX + 1)
    if len(data) > PLAN_MAX:
        raise ValueError("the plan is larger than %d bytes" % PLAN_MAX)
    return json.loads(data.decode("utf-8"))


def emit(report):
    text = json.dumps(report, ensure_ascii=True)
    out = sys.stdout
    out.write("\n" + MARKER + "\n" + text + "\n")
    out.flush()


def main():
    report = {
        "readiness": {"state": "not_reported"},
        "foreground": True,
        "survivors": [],
        "leftovers": [],
        "service_log_tail": "",
        "observations": [],
        "tests": None,
        "error": None,
    }
    state = {"proc": None, "log_fd": None, "log_path": None, "marker": secrets.token_hex(12)}
    procs = None
    grace = 2.0
    try:
        # Before anything else, and before the service exists.
        non_dumpable()
        signal.signal(signal.SIGTERM, on_term)
        plan = read_plan()
        grace = plan["stop_grace"]
        procs = Processes(state["marker"], plan["pid_namespace"])
        session(plan, report, state, procs)
    except BaseException:
        report["error"] = cut(traceback.format_exc(), ERROR_MAX)
    finally:
        # A second SIGTERM must not cut the stop short; the sandbox's
        # SIGKILL still ends everything.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            if procs is not None:
                stop(state["proc"], procs, grace, report)
        except BaseException:
            report["error"] = cut((report["error"] or "") + traceback.format_exc(), ERROR_MAX)
        if state["log_fd"] is not None:
            report["service_log_tail"] = fd_tail(state["log_fd"])
            os.close(state["log_fd"])
            try:
                os.unlink(state["log_path"])
            except OSError:
                pass
        emit(report)


main()
