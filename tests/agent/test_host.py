"""agent.host's memory figures under a memory cgroup: a container's or a unit's limit, not the host's
MemAvailable, is what kills a setup or a proof that does not fit. Fake /proc and /sys trees stand in for the
kernel's (cgroup v2, cgroup v1, a container without a cgroup namespace, a limit on an ancestor)."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent.host as host
from agent.admission import HostBudget

GiB = 1 << 30
V1_UNLIMITED = "9223372036854771712"


class FakeKernel:
    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch, *, total: int, available: int) -> None:
        self.root = root
        (root / "proc").mkdir(parents=True)
        (root / "proc" / "meminfo").write_text(
            f"MemTotal: {total // 1024} kB\nMemFree: 1 kB\nMemAvailable: {available // 1024} kB\n"
        )
        self.sys = root / "sys" / "fs" / "cgroup"
        self.sys.mkdir(parents=True)
        monkeypatch.setattr(host, "_MEMINFO", root / "proc" / "meminfo")
        monkeypatch.setattr(host, "_PROC_CGROUP", root / "proc" / "cgroup", raising=False)
        monkeypatch.setattr(host, "_CGROUP_ROOT", self.sys, raising=False)

    def proc_cgroup(self, text: str) -> None:
        (self.root / "proc" / "cgroup").write_text(text)

    def group(self, rel: str, **files: str) -> Path:
        d = self.sys / rel
        d.mkdir(parents=True, exist_ok=True)
        for name, value in files.items():
            (d / name.replace("_", ".", 1)).write_text(value + "\n")
        return d


def test_v2_memory_max_below_the_host_is_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    k = FakeKernel(tmp_path, monkeypatch, total=64 * GiB, available=48 * GiB)
    k.group("", cgroup_controllers="cpu memory")
    k.proc_cgroup("0::/system.slice/psagent.service\n")
    k.group("system.slice", memory_max="max")
    d = k.group("system.slice/psagent.service", memory_max=str(8 * GiB), memory_current=str(3 * GiB),
                memory_stat=f"anon {2 * GiB}\nfile {GiB}\ninactive_file {GiB // 2}\n")
    cg = host.cgroup_memory()
    assert cg == host.CgroupMemory(8 * GiB, 3 * GiB - GiB // 2, d / "memory.max")
    assert host.mem_available() == 8 * GiB - (3 * GiB - GiB // 2)  # not MemAvailable's 48 GiB
    assert host.mem_total() == 8 * GiB
    assert str(d / "memory.max") in host.mem_available_source()
    assert HostBudget().total == int(8 * GiB * 0.75)  # admission's host budget within the unit's limit


def test_an_ancestors_tighter_limit_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    k = FakeKernel(tmp_path, monkeypatch, total=64 * GiB, available=48 * GiB)
    k.group("", cgroup_controllers="memory")
    k.proc_cgroup("0::/user.slice/job\n")
    parent = k.group("user.slice", memory_max=str(4 * GiB), memory_current=str(3 * GiB))
    k.group("user.slice/job", memory_max="max", memory_current=str(GiB))
    assert host.mem_available() == GiB and host.mem_total() == 4 * GiB
    assert host.cgroup_memory() == host.CgroupMemory(4 * GiB, 3 * GiB, parent / "memory.max")


def test_no_limit_leaves_meminfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    k = FakeKernel(tmp_path, monkeypatch, total=64 * GiB, available=48 * GiB)
    k.group("", cgroup_controllers="memory")
    k.proc_cgroup("0::/a\n")
    k.group("a", memory_max="max", memory_current=str(GiB))
    assert host.cgroup_memory() is None
    assert host.mem_available() == 48 * GiB and host.mem_total() == 64 * GiB
    assert host.mem_available_source() == "MemAvailable"
    # a limit above what the host has free: MemAvailable is still the smaller figure
    k.group("a", memory_max=str(60 * GiB))
    assert host.mem_available() == 48 * GiB and host.mem_available_source() == "MemAvailable"
    assert host.mem_total() == 60 * GiB


def test_v1_limit_in_bytes_on_a_hybrid_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cgroup v1's memory controller (the unified mount of a hybrid host has no memory files); v1 says "no
    limit" with a page-rounded 2^63 - 1, and memory.stat's total_inactive_file is the hierarchy's."""
    k = FakeKernel(tmp_path, monkeypatch, total=64 * GiB, available=48 * GiB)
    k.group("unified", cgroup_controllers="")
    k.proc_cgroup("5:devices:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n0::/docker/abc\n")
    k.group("memory", memory_limit_in_bytes=V1_UNLIMITED)
    d = k.group("memory/docker/abc", memory_limit_in_bytes=V1_UNLIMITED, memory_usage_in_bytes=str(GiB))
    assert host.cgroup_memory() is None and host.mem_available() == 48 * GiB
    (d / "memory.limit_in_bytes").write_text(str(6 * GiB))
    (d / "memory.stat").write_text(f"inactive_file 1\ntotal_inactive_file {GiB // 4}\n")
    assert host.mem_available() == 6 * GiB - (GiB - GiB // 4) and host.mem_total() == 6 * GiB


def test_a_container_without_a_cgroup_namespace_reads_its_mount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process's path names the host's hierarchy, not mounted here: the mount is the own cgroup."""
    k = FakeKernel(tmp_path, monkeypatch, total=64 * GiB, available=48 * GiB)
    k.group("", cgroup_controllers="memory", memory_max=str(2 * GiB), memory_current=str(GiB))
    k.proc_cgroup("0::/kubepods/pod1/ctr\n")
    assert host.mem_available() == GiB and host.mem_total() == 2 * GiB


def test_no_cgroup_files_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeKernel(tmp_path, monkeypatch, total=64 * GiB, available=48 * GiB)  # no /proc/self/cgroup
    assert host.cgroup_memory() is None and host.mem_available() == 48 * GiB


def test_params_generate_refuses_what_the_cgroup_cannot_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The setup's memory pre-check: a host with 48 GiB free but a 64 MiB unit limit refuses before work,
    naming the limit (it read MemAvailable and started the setup, which the OOM killer then ended)."""
    from typer.testing import CliRunner

    import gpu.groth16.setup as setup
    from agent.cli import EXIT_USAGE, app

    def never(*_: object, **__: object) -> None:
        raise AssertionError("the setup started although it could not fit")

    k = FakeKernel(tmp_path / "kernel", monkeypatch, total=64 * GiB, available=48 * GiB)
    k.group("", cgroup_controllers="memory")
    k.proc_cgroup("0::/psagent.service\n")
    d = k.group("psagent.service", memory_max=str(64 << 20), memory_current=str(16 << 20))
    monkeypatch.setattr(setup, "generate_file", never)
    monkeypatch.setenv("PSAGENT_CACHE_DIR", str(tmp_path / "cache"))
    args = ["params", "generate", "--synthetic-constraints", "4096", "--backend", "cpu", "--test-seed", "1",
            "--out", str(tmp_path / "out")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == EXIT_USAGE, res.output
    last = res.output.strip().splitlines()[-1]
    assert "the setup needs about" in last
    assert f"50.3 MB is available ({d / 'memory.max'}: 67.1 MB less 16.8 MB in use)" in last
