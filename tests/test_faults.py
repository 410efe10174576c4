"""Faults of the environment, provoked for real: a full disk, a file size limit, permission
denied, a read-only file system, closed and broken output streams, SIGINT/SIGTERM, a damaged
or shared cache, a C locale and odd terminals. Each ends in the documented exit code and one
line naming the path and the cause, and never leaves a partial output file or a stray temp
file (DESIGN.md, exit codes)."""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli, sampled

PROFILE = str(ROOT / "profiles" / "llm-chatbot.yaml")
PROPOSAL = (ROOT / "profiles" / "proposals" / "ok-v6e-chatbot.yaml").read_text()
FAILING = (ROOT / "profiles" / "proposals" / "tpu-for-aws-team.yaml").read_text()
ONE_LINE = re.compile(r"^advisor: error: (?P<path>.+?): cannot (?P<action>[a-z ]+): (?P<cause>.+)\n$")


def advisor(
    *args: str,
    env: dict[str, str] | None = None,
    stdout: int | None = subprocess.PIPE,
    preexec: Callable[[], None] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python -m advisor ARGS`` in a fresh process (real descriptors, real signals)."""
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=stdout, stderr=subprocess.PIPE, text=True, preexec_fn=preexec, cwd=cwd or ROOT, timeout=timeout,
    )


def strays(directory: Path) -> list[str]:
    """Temp files left behind by an interrupted or failed write."""
    return sorted(p.name for p in directory.rglob("*") if p.name.startswith(".") or p.name.endswith(".tmp"))


def assert_env_fault(r: subprocess.CompletedProcess[str], path: str, *causes: str) -> None:
    assert r.returncode == 4, (r.returncode, r.stderr)
    m = ONE_LINE.match(r.stderr)
    assert m, f"not one line naming the path and the cause: {r.stderr!r}"
    assert m["path"] == path, r.stderr
    assert any(c in m["cause"] for c in causes), r.stderr
    assert "Traceback" not in r.stderr and "bug in advisor" not in r.stderr


def limit_file_size(nbytes: int) -> Callable[[], None]:
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return preexec


# ----------------------------------------------------------------------------- disk full


@pytest.mark.slow
def test_disk_full_file_size_limit_on_report_output(tmp_path: Path) -> None:
    """RLIMIT_FSIZE (the kernel's per-process file size limit) makes write() fail with EFBIG."""
    out = tmp_path / "report.md"
    out.write_text("previous report\n")
    r = advisor("report", PROFILE, "-o", str(out), preexec=limit_file_size(4096))
    assert_env_fault(r, str(out), "file too large")
    assert out.read_text() == "previous report\n"  # the previous file is left byte-identical
    assert strays(tmp_path) == []
    fresh = tmp_path / "new.md"
    r = advisor("report", PROFILE, "-o", str(fresh), preexec=limit_file_size(4096))
    assert r.returncode == 4 and not fresh.exists() and strays(tmp_path) == []


def test_disk_full_dev_full_as_stdout(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        r = advisor("recommend", PROFILE, "--no-flip", stdout=full.fileno())
    assert_env_fault(r, "<stdout>", "no space left on device")


def test_disk_full_dev_full_as_output_file() -> None:
    r = advisor("report", PROFILE, "-o", "/dev/full")
    assert_env_fault(r, "/dev/full", "no space left on device")
    assert Path("/dev/full").is_char_device()  # written in place, never replaced by a rename


def test_output_to_a_device_is_written_in_place() -> None:
    r = advisor("check", "--no-config", str(ROOT / "profiles" / "proposals" / "ok-v6e-chatbot.yaml"), "-f", "json", "-o", "/dev/stdout")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["passed"] == 1


def test_check_output_on_full_disk_leaves_nothing(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"p{i}.yaml").write_text(PROPOSAL)
    out = tmp_path / "out" / "advisor.sarif"
    out.parent.mkdir()
    r = advisor("check", "--no-config", str(tmp_path / "p*.yaml"), "-f", "sarif", "-o", str(out), preexec=limit_file_size(2048))
    assert_env_fault(r, str(out), "file too large")
    assert list(out.parent.iterdir()) == []


# ----------------------------------------------------------------------------- a real small or read-only file system


def _in_private_mount(tmp: Path, script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a private mount namespace (nothing leaks to the host); skip where not allowed."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1)")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("no permission to create a mount namespace (not root)")
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT), "PY": sys.executable, "MNT": str(tmp)}
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


@pytest.mark.slow
def test_disk_full_on_a_tiny_tmpfs(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = _in_private_mount(mnt, 'mount -t tmpfs -o size=8k tmpfs "$MNT" || exit 99; '
                               '"$PY" -m advisor report profiles/llm-chatbot.yaml -o "$MNT/report.md"; rc=$?; '
                               'ls -A "$MNT"; exit $rc')
    if r.returncode == 99:
        pytest.skip("cannot mount tmpfs here")
    assert_env_fault(subprocess.CompletedProcess(r.args, r.returncode, "", r.stderr), str(mnt / "report.md"), "no space left on device")
    assert r.stdout == ""  # nothing left on the full file system: no partial report, no temp file


def test_read_only_file_system(tmp_path: Path) -> None:
    mnt = tmp_path / "ro"
    mnt.mkdir()
    r = _in_private_mount(mnt, 'mount -t tmpfs -o ro tmpfs "$MNT" || exit 99; '
                               '"$PY" -m advisor report profiles/llm-chatbot.yaml -o "$MNT/report.md"')
    if r.returncode == 99:
        pytest.skip("cannot mount a read-only tmpfs here")
    assert_env_fault(subprocess.CompletedProcess(r.args, r.returncode, "", r.stderr), str(mnt / "report.md"), "read-only file system")


def test_read_only_file_system_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same fault where mounts are not allowed: the rename fails with EROFS."""
    import advisor.output

    def erofs(src: str, dst: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dst))

    monkeypatch.setattr(advisor.output.os, "replace", erofs)
    out = tmp_path / "r.md"
    r = run_cli("report", PROFILE, "-o", str(out))
    assert r.code == 4 and r.err == f"advisor: error: {out}: cannot write: read-only file system\n", r.err
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- permission denied


def _unwritable_dir(tmp: Path) -> Path:
    """A directory this process may not create files in. Root ignores modes, so as root use
    a kernel file system that refuses new files (/sys), else skip."""
    d = tmp / "locked"
    d.mkdir()
    d.chmod(0o500)
    if not os.access(d, os.W_OK):
        return d
    for candidate in (Path("/sys"), Path("/proc/sys")):
        try:
            fd = os.open(candidate / ".advisor-probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                return candidate
            continue
        os.close(fd)
        os.unlink(candidate / ".advisor-probe")
    pytest.skip("running as root and no directory refuses new files")


def test_permission_denied_on_output(tmp_path: Path) -> None:
    d = _unwritable_dir(tmp_path)
    out = d / "report.md"
    r = advisor("report", PROFILE, "-o", str(out))
    assert_env_fault(r, str(out), "permission denied", "operation not permitted", "read-only file system")
    assert not out.exists() and not [p for p in d.iterdir() if p.name.startswith(".report.md")]


def test_permission_denied_on_init_and_scaffold(tmp_path: Path) -> None:
    d = _unwritable_dir(tmp_path)
    r = advisor("init", str(d / "w.yaml"), "--no-input")
    assert_env_fault(r, str(d / "w.yaml"), "permission denied", "operation not permitted", "read-only file system")
    r = advisor("scaffold", PROFILE, "-o", str(d / "scaffold"))
    assert r.returncode == 4 and r.stderr.startswith(f"advisor: error: {d / 'scaffold'}: cannot "), r.stderr


def test_output_under_a_regular_file_is_an_input_error(tmp_path: Path) -> None:
    """ENOTDIR: the user named an impossible path; that is their input (exit 2), not the environment."""
    f = tmp_path / "file"
    f.write_text("x")
    r = advisor("report", PROFILE, "-o", str(f / "report.md"))
    assert r.returncode == 2 and "does not exist" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


# ----------------------------------------------------------------------------- closed and broken streams


def test_closed_stdout() -> None:
    r = advisor("recommend", PROFILE, "--no-flip", stdout=None, preexec=lambda: os.close(1))
    assert r.returncode == 4 and r.stderr == "advisor: error: <stdout>: cannot write: standard output is closed\n", r.stderr


def test_closed_stdout_does_not_matter_when_writing_a_file(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    r = advisor("report", PROFILE, "-o", str(out), stdout=None, preexec=lambda: os.close(1))
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("#") and strays(tmp_path) == []


def test_closed_stderr() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "advisor", "recommend", PROFILE, "--format", "json", "--no-flip"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=None, text=True,
        preexec_fn=lambda: os.close(2), cwd=ROOT, timeout=60,
    )
    assert p.returncode == 0 and json.loads(p.stdout)["verdict"]["device"] == "tpu"
    p = subprocess.run(
        [sys.executable, "-m", "advisor", "recommend", "/nonexistent.yaml"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True,
        preexec_fn=lambda: os.close(2), cwd=ROOT, timeout=60,
    )
    assert p.returncode == 2 and p.stdout == ""  # the message has nowhere to go; the code still tells


def test_broken_pipe_is_silent() -> None:
    """``advisor ... | head`` where head has already exited: no message, the SIGPIPE status."""
    for args in (["catalog", "--format", "json"], ["recommend", PROFILE, "--no-flip"], ["rules", "list"]):
        p = subprocess.Popen(
            [sys.executable, "-m", "advisor", *args], env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        )
        assert p.stdout is not None and p.stderr is not None
        p.stdout.close()  # the reader goes away before advisor writes a byte
        err = p.stderr.read().decode()
        assert p.wait(timeout=60) == 141, (args, err)
        assert err == "", (args, err)


# ----------------------------------------------------------------------------- signals


def _batch(tmp: Path, n: int) -> Path:
    d = tmp / "proposals"
    d.mkdir()
    for i in range(n):
        (d / f"p{i:05d}.yaml").write_text(PROPOSAL if i % 2 else FAILING)
    return d


# The child: advisor's own entry point, with a progress hook that says on a pipe (fd in argv[1])
# that the batch is under way and then waits there for the signal: the signal arrives in the
# middle of the batch by construction, not by a guess at how long start-up takes.
_CHILD = """
import os, signal, sys, time
# the signal under test is deliverable whatever the test runner inherited (a runner started in the background
# of a non-interactive shell ignores SIGINT, and advisor rightly leaves an ignored signal ignored)
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
import advisor.api
fd = int(sys.argv[1])
real = advisor.api.run_check
def run_check(*args, **kwargs):
    def progress(done, total):
        if done < total:
            os.write(fd, b"judging\\n")
            time.sleep(120)  # the signal ends this
    kwargs["progress"] = progress
    return real(*args, **kwargs)
advisor.api.run_check = run_check
from advisor.cli import main
main(sys.argv[2:])
"""


@pytest.mark.parametrize(("sig", "code", "message", "jobs"), [
    pytest.param(signal.SIGTERM, 143, "advisor: terminated\n", "2", id="sigterm-2-jobs"),
    pytest.param(signal.SIGINT, 130, "advisor: interrupted\n", "1", id="sigint-1-job"),
    pytest.param(signal.SIGTERM, 143, "advisor: terminated\n", "1", id="sigterm-1-job", marks=pytest.mark.slow),
    pytest.param(signal.SIGINT, 130, "advisor: interrupted\n", "2", id="sigint-2-jobs", marks=pytest.mark.slow),
])
def test_cancelled_check_writes_nothing(tmp_path: Path, jobs: str, sig: int, code: int, message: str) -> None:
    import select

    d = _batch(tmp_path, 400)  # a batch of 200 or more is spread over the cores
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "advisor.sarif"
    ready, tell = os.pipe()
    try:
        p = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(tell), "check", "--no-config", str(d), "-f", "sarif", "-o", str(out)],
            env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT), "ADVISOR_JOBS": jobs},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, pass_fds=(tell,),
        )
        os.close(tell)
        # wait for the child to say that it is judging (the timeout only bounds a broken child)
        assert select.select([ready], [], [], 120)[0], "the child never started judging"
        assert os.read(ready, 100) == b"judging\n"
    finally:
        os.close(ready)
    assert p.poll() is None
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == code, (p.returncode, stderr)
    assert stderr == message and stdout == ""
    assert list(out_dir.iterdir()) == []  # no output, no temp file
    assert strays(d) == []
    # the workers end with their parent: wait for that (bounded), no fixed sleep
    deadline = time.monotonic() + 30
    while (left := [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline_has(pid, str(d))]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], "worker processes outlived the cancelled run"


def _cmdline_has(pid: str, needle: str) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def test_interrupt_during_the_write_removes_the_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import advisor.output

    def interrupted(fd: int) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # delivered to main()'s handler while the temp file is open
        time.sleep(1)

    monkeypatch.setattr(advisor.output.os, "fsync", interrupted)
    out = tmp_path / "r.md"
    out.write_text("previous\n")
    r = run_cli("report", PROFILE, "-o", str(out))
    assert r.code == 143 and r.err == "advisor: terminated\n"
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # main() restores the handlers it set
    assert out.read_text() == "previous\n" and [p.name for p in tmp_path.iterdir()] == ["r.md"]


# ----------------------------------------------------------------------------- batches with bad members

BAD_MEMBERS: dict[str, str | bytes] = {
    "malformed": "name: [\n",
    "schema": "name: x\ntask: trianing\n",
    "unknown-accelerator": PROPOSAL.replace("accelerator: tpu-v6e", "accelerator: h1000"),
    "not-utf8": b"name: caf\xe9\n",
    "python-tag": "name: !!python/object/apply:os.system ['id']\n",
    "alias-bomb": "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
    + "".join(f"b{i}: &b{i} [" + ", ".join([f"*{'a' if i == 0 else f'b{i - 1}'}"] * 10) + "]\n" for i in range(10)),
}
# An empty YAML file is no proposal and no error: skipped with its reason (a repository holds them).


def _mixed_batch(tmp: Path, n_good: int) -> tuple[list[str], list[str], list[str]]:
    """n_good good proposals with every kind of bad file interleaved (and two unreadable paths)."""
    good, bad, order = [], [], []
    kinds = sorted(BAD_MEMBERS)
    for i in range(n_good):
        f = tmp / f"good{i:04d}.yaml"
        f.write_text(PROPOSAL if i % 3 else FAILING)
        good.append(str(f))
        order.append(str(f))
        if i % 37 == 0:
            kind = kinds[(i // 37) % len(kinds)]
            b = tmp / f"bad{i:04d}-{kind}.yaml"
            content = BAD_MEMBERS[kind]
            b.write_bytes(content) if isinstance(content, bytes) else b.write_text(content)
            bad.append(str(b))
            order.append(str(b))
    for unreadable in (str(tmp / "missing.yaml"), "/dev/zero"):
        bad.append(unreadable)
        order.insert(len(order) // 2, unreadable)
    return good, bad, order


def _check(paths: list[str], *args: str) -> tuple[int, str, str]:
    r = run_cli("check", "--no-config", *args, *paths)
    return r.code, r.out, r.err


@pytest.mark.slow
def test_batch_with_bad_members_same_on_one_core_and_many(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import advisor.check.batch

    good, bad, order = _mixed_batch(tmp_path, 1000)
    monkeypatch.setenv("ADVISOR_JOBS", "1")
    code1, out1, err1 = _check(order, "-f", "json")
    monkeypatch.setenv("ADVISOR_JOBS", "2")
    monkeypatch.setattr(advisor.check.batch, "PARALLEL_THRESHOLD", 2)
    code2, out2, err2 = _check(order, "-f", "json")
    assert (code1, out1, err1) == (code2, out2, err2)  # one core or many: the same report
    assert code1 == 2  # bad input outranks the policy failures
    data = json.loads(out1)
    assert [r["profile"] for r in data["results"]] == good  # every good file judged, in order
    assert [x["path"] for x in data["invalid"]] == [p for p in order if p in bad]
    assert all(x["errors"] and x["errors"][0]["message"] for x in data["invalid"])
    s = data["summary"]
    assert s["proposals"] == len(good) and s["invalid"] == len(bad) and s["passed"] + s["error"] + s["warning"] == len(good)
    assert data["exit_code"] == 2
    # every problem also goes to stderr as path:line:col: error: message
    err_lines = err1.splitlines()
    assert len(err_lines) == sum(len(x["errors"]) for x in data["invalid"])
    assert all(re.match(r"^.+:\d+:\d+: error: .+$", line) for line in err_lines)
    assert {line.split(":")[0] for line in err_lines} == set(bad)


def test_batch_bad_members_in_every_format(tmp_path: Path) -> None:
    good, bad, order = _mixed_batch(tmp_path, 40)
    code, text, err = _check(order)
    assert code == 2 and err == ""  # the text report on stdout carries the error lines itself
    for b in bad:
        assert f"{b}:1:1: error:" in text or f"{b}:" in text
    assert f"{len(bad)} invalid (not checked)" in text
    code, md, _ = _check(order, "-f", "markdown")
    assert code == 2 and "could not be checked" in md.splitlines()[0] and all(f"`{b}:" in md for b in bad)
    code, sarif, _ = _check(order, "-f", "sarif")
    doc = json.loads(sarif)
    errors = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "input-error"]
    assert code == 2 and {e["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for e in errors} == {b.lstrip("./") for b in bad}
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text()))
    code, junit, _ = _check(order, "-f", "junit")
    import xml.etree.ElementTree as ET

    root = ET.fromstring(junit)
    assert code == 2 and len(root.findall(".//testcase/error")) == len(bad) and root.get("errors") == str(len(bad))
    assert len(root.findall(".//testcase")) == len(good) + len(bad)
    code, gh, _ = _check(order, "-f", "github")
    assert code == 2 and sum("title=advisor input-error::" in line for line in gh.splitlines()) >= len(bad)
    out = tmp_path / "report.json"
    code, stdout, err = _check(order, "-f", "json", "-o", str(out))
    assert code == 2 and stdout == "" and len(json.loads(out.read_text())["invalid"]) == len(bad) and err


def test_batch_of_only_bad_files_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.sarif"
    out.write_text("previous")
    b = tmp_path / "b.yaml"
    b.write_text("name: [\n")
    code, _, err = _check([str(b)], "-f", "sarif", "-o", str(out))
    # nothing written, and nothing stale left for a later CI step to post as this run's report
    assert code == 2 and err.startswith(f"{b}:") and not out.exists()


# ----------------------------------------------------------------------------- the cache and state directories


@pytest.fixture
def fresh_cache(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state"), "ADVISOR_NO_CACHE": ""}


def _reference() -> str:
    r = advisor("recommend", PROFILE, "--format", "json", "--no-flip", env={"ADVISOR_NO_CACHE": "1"})
    assert r.returncode == 0
    return r.stdout


@pytest.mark.slow
def test_cache_unwritable_or_impossible_degrades_to_no_cache(tmp_path: Path) -> None:
    ref = _reference()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    places = [str(blocker / "cache"), "/proc/advisor-cache", str(_unwritable_dir(tmp_path) / "advisor-cache")]
    for place in places:
        r = advisor("recommend", PROFILE, "--format", "json", "--no-flip",
                    env={"XDG_CACHE_HOME": place, "XDG_STATE_HOME": place, "ADVISOR_NO_CACHE": ""})
        assert r.returncode == 0 and r.stderr == "" and r.stdout == ref, (place, r.stderr)


def test_cache_on_a_full_disk_leaves_no_temp_file(tmp_path: Path, fresh_cache: dict[str, str]) -> None:
    ref = _reference()
    r = advisor("recommend", PROFILE, "--format", "json", "--no-flip", env=fresh_cache, preexec=limit_file_size(1024))
    assert r.returncode == 0 and r.stdout == ref, r.stderr
    assert strays(tmp_path / "cache") == [] and not list((tmp_path / "cache").rglob("*.pickle"))


def test_cache_deleted_mid_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor import cache
    from advisor.api import Context

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("ADVISOR_NO_CACHE", raising=False)
    real_dumps = cache.pickle.dumps

    def dumps_then_vanish(value: object, protocol: int) -> bytes:
        shutil.rmtree(tmp_path / "cache")  # another process cleans the cache while this one writes
        return real_dumps(value, protocol=protocol)

    monkeypatch.setattr(cache.pickle, "dumps", dumps_then_vanish)
    ctx = Context.load()
    assert ctx.kb.rules and not (tmp_path / "cache").exists()


def test_cache_is_stored_under_the_files_as_they_were_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule file edited while a run reads the built-in tables must not leave that run's (old) tables cached under the
    new files' signature: the signature is taken before reading. Before, it was taken again when storing, and the next
    run read the stale tables (an edited rules/kubernetes-targets.yaml ignored until the cache was cleared)."""
    from advisor import cache
    from advisor.api import Context

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("ADVISOR_NO_CACHE", raising=False)
    states = iter(["before-the-edit", "after-the-edit"])  # the files change once, while the run reads them
    monkeypatch.setattr(cache, "signature", lambda root: next(states, "after-the-edit"))
    Context._builtin()
    stored = sorted(p.name for p in (tmp_path / "cache").rglob("builtin-*.pickle"))
    assert stored == ["builtin-before-the-edit.pickle"], stored


@pytest.mark.slow
def test_cache_shared_by_16_concurrent_runs(tmp_path: Path, fresh_cache: dict[str, str]) -> None:
    ref = _reference()
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT), **fresh_cache}
    cmd = [sys.executable, "-m", "advisor", "recommend", PROFILE, "--format", "json", "--no-flip"]
    for _round in range(1):  # sixteen cold starts race to build, write and read the cache
        procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(16)]
        results = [(p.communicate(timeout=120), p.returncode) for p in procs]
        assert all(code == 0 and out == ref and err == "" for (out, err), code in results), [e for (_, e), _ in results][:2]
        assert len(list((tmp_path / "cache" / "advisor").glob("builtin-*.pickle"))) == 1
        assert strays(tmp_path / "cache") == [] and strays(tmp_path / "state") == []
        assert len((tmp_path / "state" / "advisor" / "cache.key").read_bytes()) == 32
    r = advisor("recommend", PROFILE, "--format", "json", "--no-flip", env=fresh_cache)  # and the result is usable
    assert r.returncode == 0 and r.stdout == ref


@pytest.mark.parametrize("damage", sampled(["truncated", "garbage", "empty", "short-key", "other-key", "directory"], every=6))
def test_corrupted_cache_is_never_trusted(tmp_path: Path, fresh_cache: dict[str, str], damage: str) -> None:
    ref = _reference()
    assert advisor("recommend", PROFILE, "--format", "json", "--no-flip", env=fresh_cache).returncode == 0
    (pickle_file,) = (tmp_path / "cache" / "advisor").glob("builtin-*.pickle")
    key = tmp_path / "state" / "advisor" / "cache.key"
    if damage == "truncated":
        pickle_file.write_bytes(pickle_file.read_bytes()[: pickle_file.stat().st_size // 2])
    elif damage == "garbage":
        pickle_file.write_bytes(os.urandom(4096))
    elif damage == "empty":
        pickle_file.write_bytes(b"")
    elif damage == "short-key":
        key.write_bytes(b"k")
    elif damage == "other-key":
        key.write_bytes(os.urandom(32))
    else:
        pickle_file.unlink()
        pickle_file.mkdir()
    r = advisor("recommend", PROFILE, "--format", "json", "--no-flip", env=fresh_cache)
    assert r.returncode == 0 and r.stdout == ref and r.stderr == "", r.stderr
    assert strays(tmp_path) == []


def test_xdg_directories_are_honoured(tmp_path: Path, fresh_cache: dict[str, str]) -> None:
    home = Path(os.environ["HOME"])
    assert advisor("recommend", PROFILE, "--format", "json", "--no-flip", env=fresh_cache).returncode == 0
    assert len(list((tmp_path / "cache" / "advisor").glob("builtin-*.pickle"))) == 1
    assert (tmp_path / "state" / "advisor" / "cache.key").is_file()
    assert not (home / ".cache" / "advisor").exists()
    # relative values are ignored (XDG base directory spec): the default under $HOME is used
    r = advisor(
        "recommend",
        PROFILE,
        "--format",
        "json",
        "--no-flip",
        env={"XDG_CACHE_HOME": "rel/cache", "XDG_STATE_HOME": "rel/state", "ADVISOR_NO_CACHE": ""},
        cwd=tmp_path,
    )
    assert r.returncode == 0 and not (tmp_path / "rel").exists()
    assert list((home / ".cache" / "advisor").glob("builtin-*.pickle"))


# ----------------------------------------------------------------------------- locale and terminal


ROW = re.compile(r"^\s+\*?\s+(?P<acc>[a-z][a-z0-9-]+)\s+(?P<count>\d+)\s+\S+(?: ms| h| min)?\s+(?P<cost>\$[\d,]+(?:\.\d\d)?|unpriced)\s")


def _costs(profile: str) -> dict[tuple[str, int], str]:
    """(accelerator, count) -> the cost as the text renderer must print it, from the JSON output."""
    from advisor.fmt import money

    r = advisor("recommend", profile, "--format", "json", "--no-flip")
    return {(c["accelerator"], c["count"]): money(c["cost_usd"]) for c in json.loads(r.stdout)["candidates"]}


def assert_candidate_rows_whole(text: str, profile: str) -> None:
    """Every candidate row on one line with its id, count and cost exactly as in the JSON."""
    costs = _costs(profile)
    lines = [" " + line.replace("|", " ") for line in text.splitlines()]  # ASCII box borders in a C locale
    rows = [m for m in map(ROW.match, lines) if m and (m["acc"], int(m["count"])) in costs]
    assert len(rows) >= 10, text[:2000]
    for m in rows:
        assert m["cost"] == costs[(m["acc"], int(m["count"]))], m.group(0)


@pytest.mark.parametrize("env", sampled([
    {"LANG": "C", "LC_ALL": "C"},
    {"LC_ALL": "POSIX", "TERM": "dumb"},
    {"COLUMNS": "40"},
    {"COLUMNS": "300", "TERM": "dumb"},
    {"PYTHONIOENCODING": "ascii", "COLUMNS": "40"},
    {"PYTHONIOENCODING": "latin-1", "LC_ALL": "C"},
], every=2, ids=["lang-c", "posix-dumb", "columns-40", "columns-300", "ascii", "latin-1"]))
def test_locale_and_width_into_a_pipe(env: dict[str, str]) -> None:
    """Piped output fits COLUMNS (else 100 columns): no '…', every cost whole, no line wider
    than the width where the numbers fit in it."""
    width = int(env.get("COLUMNS") or os.environ.get("COLUMNS") or 100)
    profiles = (PROFILE, str(ROOT / "profiles" / "llama3-8b-lora.yaml"))
    r = advisor("recommend", *profiles, "--no-flip", "--explain", env=env)  # one process for both
    assert r.returncode == 0 and r.stderr == "", r.stderr
    if width >= 80:
        assert max(map(len, r.stdout.splitlines())) <= width
    views = re.split(r"^.*advisor verdict.*$", r.stdout, flags=re.M)[1:]
    assert len(views) == len(profiles)
    for profile, view in zip(profiles, views, strict=True):
        assert "…" not in view and "..." not in view.split("Setup")[0]
        assert_candidate_rows_whole(view, profile)
    r = advisor("check", "--no-config", str(ROOT / "profiles" / "proposals"), env=env)
    assert r.returncode == 1 and "…" not in r.stdout, r.stderr
    r = advisor("catalog", env=env)
    assert r.returncode == 0 and "…" not in r.stdout


@pytest.mark.parametrize("columns", ["40", "80", "300"])
def test_narrow_and_wide_terminals_never_cut_numbers(columns: str) -> None:
    """On a terminal (a pty) tables fit COLUMNS where they can; numbers and ids are never cut."""
    import pty

    master, slave = pty.openpty()
    try:
        p = subprocess.Popen(
            [sys.executable, "-m", "advisor", "recommend", PROFILE, "--no-flip", "--explain"],
            env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT), "COLUMNS": columns, "TERM": "xterm"},
            stdout=slave, stderr=subprocess.PIPE, cwd=ROOT,
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert p.wait(timeout=60) == 0
    finally:
        os.close(master)
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", b"".join(chunks).decode())
    assert "…" not in text
    assert_candidate_rows_whole(text, PROFILE)
    for acc in ("tpu-v5e", "tpu-v6e", "a100-80gb", "mi300x"):
        assert acc in text


def test_an_empty_member_is_skipped_with_its_reason(tmp_path: Path) -> None:
    _good, _bad, order = _mixed_batch(tmp_path, 5)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    _code, out, _err = _check([*order, str(empty)], "-f", "json")
    data = json.loads(out)
    assert {"path": str(empty), "reason": "an empty YAML file"} in data["skipped_files"]
    assert str(empty) not in [x["path"] for x in data["invalid"]]
