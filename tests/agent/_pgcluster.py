"""A throwaway PostgreSQL cluster for the store's and the fleet's tests.

``PSAGENT_TEST_PG_URL`` names a server to use instead. Otherwise the distribution's binaries (PATH,
``pg_config --bindir``, /usr/lib/postgresql/*/bin) make a cluster in a temporary directory: ``initdb`` then
``pg_ctl start`` listening on a unix socket in that directory only (no TCP port to collide with). PostgreSQL
refuses to run as root, so under root the cluster belongs to an unprivileged user (``postgres`` when the
package created it, else ``nobody``) through ``runuser``/``setpriv``. When no server can be had, the reason
is returned and the tests that need one skip saying it (``.ci/run`` installs the package first)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass
class PgServer:
    url: str | None  # None: no server; ``reason`` says why
    reason: str = ""

    def database(self) -> str:
        """A fresh, empty database on the server (one per test: the stores never meet)."""
        assert self.url is not None
        import psycopg

        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return _with_dbname(self.url, name)


def _with_dbname(url: str, name: str) -> str:
    base, _, query = url.partition("?")
    head = base.rsplit("/", 1)[0]
    return f"{head}/{name}" + (f"?{query}" if query else "")


def _bindir() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=False).stdout
        if out.strip() and (Path(out.strip()) / "initdb").exists():
            return Path(out.strip())
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(dirs[-1]).parent if dirs else None


def _as_user() -> tuple[list[str], str | None]:
    """The command prefix that runs the server unprivileged (empty when we are not root), and its user."""
    if os.geteuid() != 0:
        return [], None
    for user in ("postgres", "nobody"):
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        if shutil.which("runuser"):
            return ["runuser", "-u", user, "--"], user
        if shutil.which("setpriv"):
            pw = pwd.getpwnam(user)
            return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups"], user
    return [], "<none>"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def pg_server() -> Iterator[PgServer]:
    """A server for the session: the one named by PSAGENT_TEST_PG_URL, or a throwaway cluster."""
    url = os.environ.get("PSAGENT_TEST_PG_URL")
    if url:
        yield PgServer(url)
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        yield PgServer(None, "psycopg is not installed (pip install -e '.[dev]')")
        return
    bindir = _bindir()
    if bindir is None:
        yield PgServer(None, "no PostgreSQL binaries (initdb) on this machine: apt-get install postgresql")
        return
    prefix, user = _as_user()
    if user == "<none>":
        yield PgServer(None, "running as root with no unprivileged user or no runuser/setpriv to run initdb")
        return
    root = Path(tempfile.mkdtemp(prefix="psagent-pg-"))  # /tmp itself, reachable by the unprivileged user
    if user is not None:
        pw = pwd.getpwnam(user)
        os.chown(root, pw.pw_uid, pw.pw_gid)
    data, port = root / "data", _free_port()
    env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
    started = False
    try:
        init = subprocess.run(
            [*prefix, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "psagent", "--no-sync",
             "-E", "UTF8"],
            capture_output=True, text=True, env=env, check=False, timeout=120,
        )
        if init.returncode != 0:
            yield PgServer(None, f"initdb failed: {init.stderr.strip()[-300:]}")
            return
        opts = (
            f"-c listen_addresses='' -c unix_socket_directories={root} -p {port} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        start = subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", opts, "-w",
             "-t", "60", "start"],
            capture_output=True, text=True, env=env, check=False, timeout=90,
        )
        if start.returncode != 0:
            log = (root / "log").read_text(errors="replace")[-300:] if (root / "log").exists() else ""
            yield PgServer(None, f"pg_ctl start failed: {start.stderr.strip()[-200:]} {log}")
            return
        started = True
        yield PgServer(f"postgresql://psagent@/postgres?host={root}&port={port}")
    finally:
        if started:
            subprocess.run(
                [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True, env=env, check=False, timeout=60,
            )
        shutil.rmtree(root, ignore_errors=True)
