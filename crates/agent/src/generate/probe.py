"""Starts a generated web service, calls it, runs its tests and stops it.

The dynamic verification of `repo-agent generate`, driven from
`crates/agent/src/generate/probe.rs`. It runs in one sandbox call, with the
repository as working directory and its virtualenv's interpreter, as

    python -I -c <this file> PLAN RESULTS

`-I` keeps the repository's own modules (a `json.py`, a `signal.py`) off
`sys.path`, where they would shadow the standard library imported here.
PLAN is the JSON that probe.rs wrote; RESULTS is written whatever happens
(a `finally`), and a first time before the service is stopped, so that a
sandbox timeout during the stop still leaves the observations behind.

The driver observes; probe.rs judges (expected statuses and keys are not in
the plan). Every wait has a deadline, every loop a bound, and every text
kept is a tail or an excerpt.
"""

import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import xml.etree.ElementTree as ET

LOG_TAIL = 4096
BODY_EXCERPT = 600
BODY_MAX = 1 << 20
MAX_KEYS = 256
KEY_MAX = 200
ERROR_MAX = 300
COMMAND_MAX = 200
POLL = 0.2
JUNIT_MAX = 16 << 20
MARK = "REPO_AGENT_PROBE"
# Rounds of killing what escaped the process group: each round may find
# the children of the processes the previous one killed.
SURVIVOR_ROUNDS = 5


class Stopped(Exception):
    """The sandbox sent SIGTERM (its time limit): unwind to the `finally`."""


def on_term(signum, _frame):
    raise Stopped("the probe was stopped by signal %d (the sandbox call's time limit)" % signum)


def now_ms(since):
    return int((time.monotonic() - since) * 1000)


def cut(text, limit):
    return text if len(text) <= limit else text[:limit] + "…"


def read_tail(path, limit=LOG_TAIL):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read(limit)
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    return "…" + text if size > limit else text


def listening(port):
    """The loopback address on which `port` accepts a connection, if any."""
    for host in ("127.0.0.1", "::1"):
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return host
        except OSError:
            pass
    return None


def zombie(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read(4096)
    except OSError:
        return True
    # The state follows the command name, which may itself hold ") ".
    rest = stat.rpartition(b")")[2].split()
    return not rest or rest[0] in (b"Z", b"X")


def marked(marker):
    """(pid, command line) of the live processes carrying this run's mark.

    The mark is in the environment of everything the driver starts and is
    inherited by their descendants, including those that leave the process
    group (`setsid`, double forks) where a group kill does not reach.
    """
    needle = ("%s=%s" % (MARK, marker)).encode()
    own = os.getpid()
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == own:
            continue
        pid = int(name)
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                environ = f.read(1 << 20)
        except OSError:
            continue
        if needle not in environ.split(b"\0") or zombie(pid):
            continue
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmdline = f.read(4096)
        except OSError:
            cmdline = b""
        command = cmdline.replace(b"\0", b" ").decode("utf-8", "replace").strip()
        found.append((pid, cut(command, COMMAND_MAX)))
    return found


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


def child_env(port, marker):
    env = dict(os.environ)
    env.update(
        {
            "PORT": str(port),
            MARK: marker,
            "PYTHONUNBUFFERED": "1",
            # The verification should leave the generated repository as it was.
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    return env


def start(plan, work, marker):
    shell = shutil.which("bash") or "sh"
    with open(os.path.join(work, "service.log"), "wb") as log:
        return subprocess.Popen(
            [shell, plan["start_script"]],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=child_env(plan["port"], marker),
        )


def survivor(marker, grace=1.0):
    """Whether a process of the run lives on after the start script ended.

    A child the script forked just before it returned may still be between
    fork and exec, its environment unreadable for a moment: it is looked
    for again for up to `grace` seconds before the service counts as exited.
    """
    end = time.monotonic() + grace
    while True:
        if marked(marker):
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


def wait_ready(proc, plan, marker, results):
    """Fills `readiness`; the loopback host that answered, if one did.

    A start script that returns while a process it started lives on (a
    daemon) is waited for as long as that process lives: it may still be
    starting. Such a service is not in the foreground.
    """
    port = plan["port"]
    begun = time.monotonic()
    deadline = begun + plan["startup_timeout"]
    while True:
        host = listening(port)
        if host is not None:
            if proc.poll() is not None:
                results["foreground"] = False
            results["readiness"] = {"state": "listening", "after_ms": now_ms(begun)}
            return host
        code = proc.poll()
        if code is not None:
            if survivor(marker):
                results["foreground"] = False
            else:
                results["readiness"] = {
                    "state": "exited",
                    "code": code if code >= 0 else None,
                    "after_ms": now_ms(begun),
                }
                return None
        if time.monotonic() >= deadline:
            results["readiness"] = {"state": "never_listened"}
            return None
        time.sleep(POLL)


def call(host, port, request, timeout):
    """One request; what came back, bounded. Never raises for the service's faults."""
    seen = {
        "status": None,
        "body_excerpt": "",
        "json": "none",
        "keys": [],
        "error": None,
    }
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
        for _ in range(BODY_MAX // 65536 + 2):
            chunk = response.read1(65536)
            if not chunk:
                complete = not expired.is_set()
                break
            data += chunk
            if len(data) > BODY_MAX:
                seen["json"] = "too_large"
                break
        text = data.decode("utf-8", "replace")
        seen["body_excerpt"] = cut(text, BODY_EXCERPT)
        if expired.is_set():
            seen["error"] = "the response was not complete within %.1f s" % timeout
        elif complete and data:
            describe_json(data, seen)
    except Exception as e:  # the service's faults are observations
        if expired.is_set():
            seen["error"] = "no complete response within %.1f s" % timeout
        else:
            seen["error"] = cut("%s: %s" % (type(e).__name__, e), ERROR_MAX)
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


def junit_counts(path):
    try:
        if os.path.getsize(path) > JUNIT_MAX:
            return None
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for case in root.iter("testcase"):
        tags = {child.tag for child in case}
        if "error" in tags:
            counts["errors"] += 1
        elif "failure" in tags:
            counts["failed"] += 1
        elif "skipped" in tags:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts


def summary_counts(log):
    """Counts from pytest's last summary line (`1 failed, 2 passed in 0.1s`)."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    names = {"passed": "passed", "failed": "failed", "error": "errors", "errors": "errors", "skipped": "skipped"}
    lines = [l for l in log.splitlines() if re.search(r"\d+ (passed|failed|errors?|skipped)", l)]
    if lines:
        for number, word in re.findall(r"(\d+) (passed|failed|errors?|skipped)", lines[-1]):
            counts[names[word]] += int(number)
    return counts


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


def run_tests(plan, work, marker):
    junit = os.path.join(work, "junit.xml")
    log_path = os.path.join(work, "tests.log")
    for stale in (junit, log_path):
        try:
            os.remove(stale)
        except OSError:
            pass
    command = [
        sys.executable, "-m", "pytest", "-q", "tests",
        "--junitxml=" + junit,
        # The verification should leave the generated repository as it was.
        "-p", "no:cacheprovider",
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=child_env(plan["port"], marker),
        )
    timed_out = False
    try:
        proc.wait(timeout=plan["test_timeout"])
    except subprocess.TimeoutExpired:
        timed_out = True
    # Also what the tests started and left running in their group.
    stop_group(proc, 1.0)
    log = read_tail(log_path)
    counts = junit_counts(junit) or summary_counts(log)
    code = proc.returncode
    return dict(
        counts,
        exit_code=None if timed_out or code is None or code < 0 else code,
        timed_out=timed_out,
        log_tail=log,
    )


def gone(proc, marker, grace):
    """Whether the start script and every marked process end within `grace`."""
    end = time.monotonic() + grace
    while True:
        if (proc is None or proc.poll() is not None) and not marked(marker):
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


def stop(proc, marker, results):
    """Stops the service and whatever it left; lists what outlived it.

    Listed in `leftovers`: what still ran after the start script had
    returned (a daemon, which also makes the service not a foreground one),
    and what survived the group's SIGTERM and SIGKILL (it left the group).
    """
    leftovers = results["leftovers"]
    noted = set()

    def note(pid, command):
        if pid not in noted:
            noted.add(pid)
            leftovers.append(("%d %s" % (pid, command)).strip())

    if proc is not None and proc.poll() is not None:
        for pid, command in marked(marker):
            results["foreground"] = False
            note(pid, command)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc is not None:
            signal_group(proc.pid, sig)
        for pid in noted:
            signal_pid(pid, sig)
        if gone(proc, marker, 1.0):
            break
    for _ in range(SURVIVOR_ROUNDS):
        rest = marked(marker)
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


def write(path, results):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f)
    os.replace(tmp, path)


def probe(plan, results, marker, state):
    port = plan["port"]
    if listening(port) is not None:
        results["readiness"] = {"state": "port_busy"}
        return
    if not os.path.isfile(plan["start_script"]):
        results["readiness"] = {"state": "no_start_script"}
    else:
        state["proc"] = start(plan, plan["work_dir"], marker)
        host = wait_ready(state["proc"], plan, marker, results)
        if host is not None:
            for request in plan["requests"]:
                results["observations"].append(call(host, port, request, plan["request_timeout"]))
    if plan["run_tests"] and os.path.isdir("tests"):
        results["tests"] = run_tests(plan, plan["work_dir"], marker)


def main():
    signal.signal(signal.SIGTERM, on_term)
    results_path = sys.argv[2]
    results = {
        "readiness": {"state": "never_listened"},
        "foreground": True,
        "service_log_tail": "",
        "observations": [],
        "tests": None,
        "leftovers": [],
        "driver_error": None,
    }
    state = {"proc": None}
    marker = secrets.token_hex(12)
    work = os.path.dirname(os.path.abspath(results_path))
    try:
        with open(sys.argv[1], encoding="utf-8") as f:
            plan = json.load(f)
        work = plan["work_dir"]
        probe(plan, results, marker, state)
    except BaseException:
        results["driver_error"] = cut(traceback.format_exc(), LOG_TAIL)
    finally:
        # A second SIGTERM must not cut the stop short; the sandbox's SIGKILL
        # still ends everything.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        results["service_log_tail"] = read_tail(os.path.join(work, "service.log"))
        try:
            write(results_path, results)
            stop(state["proc"], marker, results)
        except BaseException:
            results["driver_error"] = cut(
                (results["driver_error"] or "") + traceback.format_exc(), LOG_TAIL
            )
        results["service_log_tail"] = read_tail(os.path.join(work, "service.log"))
        write(results_path, results)


main()
