"""Smoke test of the packaged build: run dist/stockade/stockade from a clean temporary folder.

Run by `packaging/smoke`, inside a private D-Bus session with an unlocked GNOME Keyring, so
the bundle's Secret Service backend is what keeps the snapshot key of the parked run, as on a
desktop. A second turn runs as on a headless server: no D-Bus, no keyring, the snapshot key
given in STOCKADE_SNAPSHOT_KEY.
Every step must exit with the expected code and leave its output; the first failure stops
the run with a clear message and a non-zero exit.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "thf" / "v1.0-canonical-full.thf"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
STEP_TIMEOUT_SECONDS = 120
MAX_RESUME_ROUNDS = 10
KEYRING_PASSWORD = "stockade-smoke"  # unlocks a throwaway keyring inside the temp folder


class SmokeFailure(Exception):
    """A smoke step failed; the message says which and why."""


@dataclass
class Smoke:
    """Runs bundle commands in `work` with a private environment and records timings."""

    exe: Path
    work: Path
    env: dict[str, str]
    timings: list[tuple[str, float]] = field(default_factory=list)

    def run(self, label: str, *args: str,
            expect: int | frozenset[int] = 0) -> subprocess.CompletedProcess[str]:
        started = time.perf_counter()
        try:
            result = subprocess.run(
                [str(self.exe), *args], cwd=self.work, env=self.env, capture_output=True,
                text=True, encoding="utf-8", timeout=STEP_TIMEOUT_SECONDS, check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise SmokeFailure(f"{label}: no answer within {STEP_TIMEOUT_SECONDS} s") from None
        elapsed = time.perf_counter() - started
        self.timings.append((label, elapsed))
        allowed = expect if isinstance(expect, frozenset) else frozenset({expect})
        if result.returncode not in allowed:
            raise SmokeFailure(
                f"{label}: exit {result.returncode}, expected {expect}\n"
                f"  command: stockade {' '.join(args)}\n"
                f"  stdout: {result.stdout.strip()[-2000:]}\n  stderr: {result.stderr.strip()[-2000:]}"
            )
        if "Traceback (most recent call last)" in result.stderr:
            raise SmokeFailure(f"{label}: printed a traceback:\n{result.stderr[-2000:]}")
        return result

    def run_json(self, label: str, *args: str, expect: int | frozenset[int] = 0) -> Any:
        result = self.run(label, *args, "--json", expect=expect)
        try:
            return json.loads(result.stdout)
        except json.JSONDecodeError:
            raise SmokeFailure(f"{label}: --json output is not JSON: {result.stdout[:500]!r}") \
                from None


def require(condition: bool, message: str) -> None:
    if not condition:
        raise SmokeFailure(message)


def require_file(path: Path, what: str, min_bytes: int = 1) -> None:
    require(path.is_file(), f"{what}: {path.name} was not written")
    require(path.stat().st_size >= min_bytes, f"{what}: {path.name} is empty")


def xcb_screenshot(smoke: Smoke, model: Path) -> None:
    """The same screenshot on a real X server (Xvfb): the xcb platform plugin and the X
    libraries the bundle carries load and draw, as on a Linux desktop."""
    xvfb_run = shutil.which("xvfb-run")
    require(xvfb_run is not None, "xvfb-run is not installed (packaging/smoke installs xvfb "
            "with apt when it runs as root; install xvfb and xauth otherwise)")
    shot = smoke.work / "shot-xcb.png"
    env = dict(smoke.env, QT_QPA_PLATFORM="xcb")
    xcb = Smoke(exe=Path(str(xvfb_run)), work=smoke.work, env=env, timings=smoke.timings)
    xcb.run("screenshot on X (xcb)", "-a", "-s", "-screen 0 1400x900x24", str(smoke.exe),
            model.name, "--screenshot", shot.name)
    require_file(shot, "screenshot on X", 1000)
    require(shot.read_bytes()[:8] == PNG_SIGNATURE, "screenshot on X: not a PNG file")


def start_keyring(work: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """An unlocked GNOME Keyring (Secret Service) on this D-Bus session, data in `work`."""
    daemon = shutil.which("gnome-keyring-daemon")
    if daemon is None:
        raise SmokeFailure("gnome-keyring-daemon is not installed (packaging/smoke installs it "
                           "with apt when it runs as root; install gnome-keyring otherwise)")
    if not env.get("DBUS_SESSION_BUS_ADDRESS"):
        raise SmokeFailure("no D-Bus session: run this through packaging/smoke")
    proc = subprocess.Popen(
        [daemon, "--foreground", "--unlock", "--components=secrets"],
        env=env, cwd=work, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    proc.stdin.write(KEYRING_PASSWORD.encode())
    proc.stdin.close()
    return proc


def wait_for_secure_keyring(smoke: Smoke) -> str:
    """Poll `stockade keys status` until the bundle sees a secure keyring; its backend name."""
    deadline = time.monotonic() + 20
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = smoke.run_json("keys status", "keys", "status")["keyring"]
        if status.get("is_secure"):
            return str(status["backend"])
        time.sleep(0.3)
    raise SmokeFailure(
        "the bundle never saw a secure keyring (is its Secret Service backend bundled?): "
        f"{status}"
    )


def pending_ids(summary: dict[str, Any]) -> list[str]:
    return [str(call["id"]) for call in summary.get("pending", [])]


def governed_turn(smoke: Smoke, model: Path, *extra: str,
                  finish: str = "completed") -> tuple[str, int, int]:
    """assist parks (exit 3); approve every pending call; resume until the run finishes
    with outcome `finish`.

    Returns the run id, how many calls were approved and how many resume rounds it took.
    """
    parked = smoke.run_json(
        "assist (parks)", "assist", model.name, "--provider", "offline", "--prompt",
        "Review this model and propose missing STRIDE threats.", "--write", *extra, expect=3,
    )
    run_id = str(parked["run_id"])
    require(parked["outcome"] == "parked", f"assist: outcome {parked['outcome']}, not parked")
    listed = smoke.run_json("runs list", "runs", "list", "--status", "parked")
    require([r["run_id"] for r in listed] == [run_id], f"runs list: {listed}")
    approved = 0
    summary = parked
    for round_no in range(1, MAX_RESUME_ROUNDS + 1):
        ids = pending_ids(summary)
        require(bool(ids), f"run {run_id} is parked with no pending call")
        for call_id in ids:
            decision = smoke.run_json(f"runs approve {call_id}", "runs", "approve", run_id,
                                      call_id, "--actor", "smoke")
            require(decision["decision"] == "approved", f"approve {call_id}: {decision}")
            approved += 1
        # Each resume either ends the turn (0) or parks on the offline provider's next
        # batch of proposals (3); the code must agree with the outcome it prints.
        resumed = smoke.run(f"runs resume #{round_no}", "runs", "resume", run_id, "--json",
                            expect=frozenset({0, 3}))
        summary = json.loads(resumed.stdout)
        require((resumed.returncode == 3) == (summary["outcome"] == "parked"),
                f"resume: exit {resumed.returncode} with outcome {summary['outcome']}")
        if summary["outcome"] != "parked":
            require(summary["outcome"] == finish,
                    f"resume: outcome {summary['outcome']} ({summary.get('reason')}), "
                    f"expected {finish}")
            failed = [c for c in summary["calls"] if c["status"] != "succeeded"]
            require(not failed, f"resume: calls did not succeed: {failed}")
            require(summary["document"]["written"] is True, "resume: the document was not saved")
            return run_id, approved, round_no
    raise SmokeFailure(f"run {run_id} still parked after {MAX_RESUME_ROUNDS} resume rounds")


def check_audit(smoke: Smoke, run_id: str, approved: int) -> None:
    smoke.run("audit verify", "audit", "verify")
    text = smoke.run("audit export", "audit", "export", run_id).stdout
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    # The export ends with one line sealing it (event count, last MAC, chain head).
    require(bool(lines) and set(lines[-1]) == {"export"},
            f"audit export: the last line is not the seal: {str(lines[-1:])[:200]}")
    kinds = [line["kind"] for line in lines[:-1]]
    exported = smoke.work / f"{run_id}.audit.jsonl"
    exported.write_text(text, encoding="utf-8")
    smoke.run("audit verify --export", "audit", "verify", "--export", exported.name)
    require(kinds.count("tool.approved") == approved,
            f"audit: {kinds.count('tool.approved')} approvals recorded, {approved} given")
    require(bool(kinds) and kinds[-1] == "run.finished", f"audit: last event {kinds[-1:]}")


def team_driver(smoke: Smoke) -> None:
    """Team mode's PostgreSQL driver is inside the bundle: with no server listening, the
    command reaches libpq and says it cannot connect (not that a module is missing)."""
    env = {k: v for k, v in smoke.env.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    env["STOCKADE_HOME"] = str(smoke.work / "team-home")
    env["STOCKADE_DATABASE_URL"] = "postgresql://stockade@127.0.0.1:9/stockade"
    team = Smoke(exe=smoke.exe, work=smoke.work, env=env, timings=smoke.timings)
    result = team.run("team status (no server)", "team", "status", expect=1)
    require("cannot connect" in result.stderr and "Connection refused" in result.stderr,
            f"team status: not libpq's refusal: {result.stderr.strip()[-500:]}")


def headless_turn(smoke: Smoke) -> tuple[str, int]:
    """The same flow on a box with no keyring at all: the operator supplies the snapshot key
    in STOCKADE_SNAPSHOT_KEY. One iteration, so the resumed run ends bounded."""
    folder = smoke.work / "headless"
    folder.mkdir()
    model = folder / "model.thf"
    shutil.copy(FIXTURE, model)
    env = {k: v for k, v in smoke.env.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    env["STOCKADE_HOME"] = str(folder / "home")
    env["STOCKADE_SNAPSHOT_KEY"] = base64.b64encode(os.urandom(32)).decode("ascii")
    headless = Smoke(exe=smoke.exe, work=folder, env=env, timings=smoke.timings)
    status = headless.run_json("keys status (headless)", "keys", "status")["keyring"]
    require(not status["is_secure"], f"headless: a keyring answered without D-Bus: {status}")
    before = model.read_bytes()
    run_id, approved, _rounds = governed_turn(headless, model, "--max-iterations", "1",
                                              finish="bounded")
    require(model.read_bytes() != before, "headless: the approved threats were not saved")
    check_audit(headless, run_id, approved)
    return run_id, approved


def _condensed(timings: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Runs of `runs approve CALL` steps folded into one line with their total time."""
    out: list[tuple[str, float]] = []
    count = 0
    for label, elapsed in timings:
        if label.startswith("runs approve ") and count and out[-1][0].startswith("runs approve"):
            count += 1
            out[-1] = (f"runs approve x{count}", out[-1][1] + elapsed)
            continue
        count = 1 if label.startswith("runs approve ") else 0
        out.append((label, elapsed))
    return out


def main(argv: Sequence[str]) -> int:
    exe = Path(argv[1]).resolve() if len(argv) > 1 else ROOT / "dist" / "stockade" / "stockade"
    if not exe.is_file():
        print(f"packaging/smoke: FAILED: no bundle at {exe}; run packaging/build first",
              file=sys.stderr)
        return 1
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="stockade-smoke-"))
    keyring_proc: subprocess.Popen[bytes] | None = None
    try:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHON_KEYRING_BACKEND")
               and not k.startswith("STOCKADE_")}
        runtime = work / "runtime"
        runtime.mkdir(mode=0o700)
        env.update({
            "STOCKADE_HOME": str(work / "home"),
            "QT_QPA_PLATFORM": "offscreen",
            "HOME": str(work),
            "XDG_DATA_HOME": str(work / "data"),
            "XDG_CONFIG_HOME": str(work / "config"),
            "XDG_CACHE_HOME": str(work / "cache"),
            "XDG_RUNTIME_DIR": str(runtime),
            "PATH": "/usr/local/bin:/usr/bin:/bin",
        })
        for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
            env.pop(var, None)
        model = work / "model.thf"
        shutil.copy(FIXTURE, model)
        smoke = Smoke(exe=exe, work=work, env=env)

        version = smoke.run("--version", "--version").stdout.strip()
        require(version.startswith("stockade ") and "built" in version,
                f"--version: unexpected {version!r}")

        result = smoke.run("validate", "validate", model.name)
        require(": ok" in result.stdout, f"validate: {result.stdout!r}")
        for suffix, marker in (("html", b"<html"), ("csv", b",")):
            out = work / f"report.{suffix}"
            smoke.run(f"report {suffix}", "report", model.name, "-o", out.name)
            require_file(out, f"report {suffix}", 100)
            require(marker in out.read_bytes()[:4096].lower(), f"report {suffix}: not {suffix}")

        shot = work / "shot.png"
        smoke.run("screenshot", model.name, "--screenshot", shot.name)
        require_file(shot, "screenshot", 1000)
        require(shot.read_bytes()[:8] == PNG_SIGNATURE, "screenshot: not a PNG file")

        xcb_screenshot(smoke, model)

        keyring_proc = start_keyring(work, env)
        backend = wait_for_secure_keyring(smoke)
        before = model.read_bytes()
        run_id, approved, rounds = governed_turn(smoke, model)
        require(model.read_bytes() != before, "assist: the approved threats were not saved")
        smoke.run("validate (after turn)", "validate", model.name)
        check_audit(smoke, run_id, approved)
        headless_run, headless_approved = headless_turn(smoke)
        team_driver(smoke)
    except SmokeFailure as failure:
        print(f"packaging/smoke: FAILED: {failure}", file=sys.stderr)
        print(f"  (work folder kept for inspection: {work})", file=sys.stderr)
        return 1
    finally:
        if keyring_proc is not None and keyring_proc.poll() is None:
            keyring_proc.send_signal(signal.SIGTERM)
            try:
                keyring_proc.wait(10)
            except subprocess.TimeoutExpired:
                keyring_proc.kill()
    total = time.perf_counter() - started
    print(f"packaging/smoke: ok in {total:.1f} s — {version}")
    print(f"  keyring: {backend}; run {run_id}: {approved} calls approved, "
          f"{rounds} resume round(s)")
    print(f"  headless (STOCKADE_SNAPSHOT_KEY, no keyring): run {headless_run}: "
          f"{headless_approved} calls approved, ended bounded")
    for label, elapsed in _condensed(smoke.timings):
        print(f"  {elapsed:6.2f} s  {label}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
