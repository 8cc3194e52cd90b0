"""The dependency direction is a contract (docs/architecture.md, the layer map in gpu/__init__.py), checked
module by module over every import (function-local and TYPE_CHECKING ones included, relative ones resolved),
so a violation fails even if it sits in code no other test executes:

* packages: agent → market/porep → gpu, nothing upward; market proper does not use gpu (market.mock may);
* porep uses only gpu's arithmetic layer (gpu.arith) and its file helper (gpu.files); porep.circuit and the
  Snap and PoSt recorders and seams may also use gpu.groth16's R1CS/prover;
* inside gpu a module imports its own part and lower layers only (gpu.placement < gpu.arith < gpu.memory <
  curves/device/transfer < ntt/msm < groth16 < bench), never a sibling part or anything above;
* inside porep likewise (POREP_RANK): the vocabulary (ids, fr32, official_params < prooftypes, commcid)
  < the hashes and the C1 < Stacked DRG and the StackedDRG circuit < SnapDeals < PoSt;
* inside agent likewise (AGENT_RANK): the leaves (host < config, store, admission, …) < the parameter
  files' kinds and the preflight checks < the operator's view (agent.opsview: exporter/page/progress/gate
  < metrics/report < document) < the proving wing (agent.proving: kind < work/engine/
  schedule/parameters/plan < verifier/circuits < result < pipeline < prover) < the request stages, requester
  and fleet < the service and the proving engine's (agent.cuzk: request/metrics/scheduler/stubs < jobs
  < server) < the composition root (agent.runtime) < the dry run and doctor < the CLI;
* no import cycles between modules (a submodule importing its own package's ``__init__`` excepted).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OURS = ("agent", "market", "porep", "gpu")
FORBIDDEN = {
    "gpu": {"agent", "market", "porep"},
    "porep": {"agent", "market"},
    "market": {"agent"},
    "agent": set(),
}

# gpu's layers (gpu/__init__.py): the longest matching prefix names a part and its rank.
GPU_RANK = {
    "gpu": (5,),  # the package's own __init__ re-exports Backend / GpuError: nothing inside gpu imports it
    "gpu.placement": (0, -1),
    "gpu.options": (0, -1),
    "gpu.files": (0, -1),
    "gpu.arith.cudashim": (0, 0),
    "gpu.arith.cpupool": (0, 0),
    "gpu.arith.montgomery_ptx": (0, 0),
    "gpu.arith._generated": (0, 1),
    "gpu.arith.fields": (0, 2),
    "gpu.arith": (0, 3),
    "gpu.memory": (0, 4),  # the per-device ledger of allocations (the MSM, the prover and its budget use it)
    "gpu.curves": (1,),
    "gpu.device": (1,),
    "gpu.transfer": (1,),
    "gpu.ntt": (2,),
    "gpu.msm": (2,),
    "gpu.groth16": (3,),
    "gpu.bench": (4,),
    "gpu.codegen": (4,),
}
# agent's layers: the longest matching prefix names a part and its rank; every agent module must have one.
AGENT_RANK = {
    "agent": (9,),  # the package's own __init__: nothing imports it
    "agent.config": (0,),
    "agent.logsetup": (0,),
    "agent.sdnotify": (0,),
    "agent.admission": (0,),
    "agent.store": (0,),
    "agent.host": (-1,),  # what the host has and what a proof used: below admission's host budget
    # above the configuration: the parameter files' kinds (official / development) and what `run` refuses
    # before it starts (shared with `status --config`)
    "agent.paramfiles": (0, 5),
    "agent.preflight": (0, 5),
    # the operator's view, below the proving wing (the prover records into its metrics and progress) and the
    # service (which publishes its gate through it): the listener, the page, stage progress (duck-typed) and
    # the gate file < the metrics and the status report < the status document
    "agent.opsview": (0, 6, 9),  # the package's own __init__: nothing imports it
    "agent.opsview.exporter": (0, 6, 0),
    "agent.opsview.page": (0, 6, 0),
    "agent.opsview.progress": (0, 6, 0),
    "agent.opsview.gate": (0, 6, 0),
    "agent.opsview.metrics": (0, 6, 1),
    "agent.opsview.report": (0, 6, 1),
    "agent.opsview.document": (0, 6, 2),
    "agent.proving": (1, 9),
    "agent.proving.kind": (1, 0),
    "agent.proving.work": (1, 1),
    "agent.proving.engine": (1, 1),
    "agent.proving.schedule": (1, 1),
    "agent.proving.parameters": (1, 1),
    "agent.proving.plan": (1, 1),
    "agent.proving.verifier": (1, 2),
    "agent.proving.circuits": (1, 2),
    "agent.proving.result": (1, 3),
    "agent.proving.pipeline": (1, 4),
    "agent.proving.prover": (1, 5),
    "agent.requester": (1,),
    "agent.stages": (2,),
    "agent.fleet": (2,),
    "agent.service": (3,),
    "agent.cuzk": (3, 9),  # Curio's proving-engine API: a service beside the agent's, on the same prover
    "agent.cuzk.proving_pb2": (3, 0),
    "agent.cuzk.request": (3, 0),
    "agent.cuzk.metrics": (3, 0),
    "agent.cuzk.scheduler": (3, 0),
    "agent.cuzk.proving_pb2_grpc": (3, 1),
    "agent.cuzk.jobs": (3, 1),
    "agent.cuzk.server": (3, 2),
    "agent.runtime": (4,),
    "agent.dryrun": (5,),
    "agent.doctor": (5,),
    "agent.cli": (6,),
}
# porep's layers: the longest matching prefix names a part and its rank; every porep module must have one.
POREP_RANK = {
    "porep": (9,),  # the package's own __init__: nothing imports it
    "porep.ids": (0, 0),
    "porep.fr32": (0, 0),
    "porep.official_params": (0, 0),
    "porep.prooftypes": (0, 1),
    "porep.commcid": (0, 1),
    "porep.hashes": (1,),
    "porep.c1": (1,),  # what a C1 is (models, codec); making one from a sector is porep.sdr's
    "porep.sdr": (2,),
    "porep.circuit": (2,),
    "porep.snap": (3,),
    "porep.post": (4,),  # WinningPoSt / WindowPoSt: shares the MerkleProof wire and checks with SnapDeals
}
# gpu.files (whole-or-nothing files, imports nothing) serves porep's caches too: one helper for both layers
PUBLIC_GPU_FOR_POREP = ("gpu.arith", "gpu.files")
PUBLIC_GPU_FOR_CIRCUIT = ("gpu.arith", "gpu.files", "gpu.groth16.r1cs", "gpu.groth16.prover")
# the circuits: the StackedDRG one, the SnapDeals update circuit's and the FallbackPoSt circuit's recorders
# (their matrices are an R1CS) and seams (porep.snap.partition / porep.post.partition answer the proof
# pipeline with those matrices)
CIRCUIT_MODULES = (
    "porep.circuit", "porep.snap.pce", "porep.snap.partition", "porep.post.pce", "porep.post.partition"
)


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def module_names(root: Path) -> dict[str, Path]:
    """Every module of ours under ``root``: dotted name → file (``pkg/__init__.py`` is ``pkg``)."""
    out: dict[str, Path] = {}
    for top in OURS:
        for f in sorted((root / top).rglob("*.py")):
            parts = list(f.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = f
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ours that ``name`` (at ``path``) imports; ``from a import b`` counts as ``a.b`` when
    that is a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for a in node.names:
                sub = f"{module}.{a.name}"
                found.add(sub if sub in known else module)
    return {m for m in found if m.split(".")[0] in OURS}


def _gpu_part(module: str) -> str:
    return max((p for p in GPU_RANK if _under(module, (p,))), key=len)


def _porep_part(module: str) -> str | None:
    parts = [p for p in POREP_RANK if _under(module, (p,))]
    return max(parts, key=len) if parts else None


def _agent_part(module: str) -> str | None:
    """The most specific AGENT_RANK entry of ``module`` (``agent`` itself only for the package)."""
    parts = [p for p in AGENT_RANK if p != "agent" and _under(module, (p,))]
    if parts:
        return max(parts, key=len)
    return "agent" if module == "agent" else None


def rule_broken(importer: str, imported: str) -> str | None:
    """Why ``importer`` may not import ``imported``, or None."""
    src, dst = importer.split(".")[0], imported.split(".")[0]
    if dst in FORBIDDEN[src]:
        return f"{src} must not import {dst}"
    if src == "market" and dst == "gpu" and not _under(importer, ("market.mock",)):
        return "market proper must not import gpu (market.mock may)"
    if src == "porep" and dst == "gpu":
        allowed = PUBLIC_GPU_FOR_CIRCUIT if _under(importer, CIRCUIT_MODULES) else PUBLIC_GPU_FOR_POREP
        if not _under(imported, allowed):
            return f"porep may import only {', '.join(allowed)} of gpu"
    if src == "gpu" and dst == "gpu":
        a, b = _gpu_part(importer), _gpu_part(imported)
        if a != b and not GPU_RANK[b] < GPU_RANK[a]:
            return f"{a} (layer {GPU_RANK[a]}) must not import {b} (layer {GPU_RANK[b]})"
    if src == "porep" and dst == "porep":
        qa, qb = _porep_part(importer), _porep_part(imported)
        if qa is None or qb is None:
            return f"{importer if qa is None else imported} has no layer in POREP_RANK"
        if qa != qb and not POREP_RANK[qb] < POREP_RANK[qa]:
            return f"{qa} (layer {POREP_RANK[qa]}) must not import {qb} (layer {POREP_RANK[qb]})"
    if src == "agent" and dst == "agent":
        pa, pb = _agent_part(importer), _agent_part(imported)
        if pa is None or pb is None:
            return f"{importer if pa is None else imported} has no layer in AGENT_RANK"
        if pa != pb and not AGENT_RANK[pb] < AGENT_RANK[pa]:
            return f"{pa} (layer {AGENT_RANK[pa]}) must not import {pb} (layer {AGENT_RANK[pb]})"
    return None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def violations(root: Path) -> list[str]:
    """Every broken rule and every import cycle among the modules under ``root``."""
    mods = module_names(root)
    known = set(mods)
    bad: list[str] = []
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps = imports_of(name, path, known)
        for dep in sorted(deps):
            why = rule_broken(name, dep)
            if why:
                bad.append(f"{path.relative_to(root)}: imports {dep}: {why}")
        # a submodule importing its own package (or a package its submodule) is not a cycle worth reporting
        graph[name] = {
            d for d in deps if d in known and not d.startswith(name + ".") and not name.startswith(d + ".")
        }
    bad += [f"import cycle: {' ↔ '.join(c)}" for c in cycles(graph)]
    return bad


def test_the_tree_keeps_the_rules() -> None:
    assert len(module_names(REPO)) > 100
    bad = violations(REPO)
    assert not bad, "dependency direction violated:\n" + "\n".join(bad)


def test_every_agent_module_has_a_layer() -> None:
    unranked = [m for m in module_names(REPO) if m.split(".")[0] == "agent" and _agent_part(m) is None]
    assert not unranked, f"give these a layer in AGENT_RANK: {unranked}"


def test_every_porep_module_has_a_layer() -> None:
    unranked = [m for m in module_names(REPO) if m.split(".")[0] == "porep" and _porep_part(m) is None]
    assert not unranked, f"give these a layer in POREP_RANK: {unranked}"


PLANTED = {
    "gpu/ntt/bad.py": ("from gpu.groth16.prover import prove\n", "gpu.ntt (layer (2,)) must not import"),
    "gpu/msm/side.py": (
        "def f():\n    import gpu.ntt.tables\n",
        "gpu.msm (layer (2,)) must not import gpu.ntt",
    ),
    "gpu/arith/fields/up.py": ("from gpu.curves import g1\n", "must not import gpu.curves"),
    "gpu/curves/rel.py": ("from ..groth16 import params\n", "must not import gpu.groth16"),
    "porep/x.py": ("from gpu.msm import msm\n", "porep may import only gpu.arith, gpu.files of gpu"),
    "porep/circuit/y.py": (
        "from gpu.groth16 import verifier\n",
        "may import only gpu.arith, gpu.files, gpu.groth16.r1cs",
    ),
    "market/z.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import gpu\n", "market proper"),
    "gpu/w.py": ("import agent.cli\n", "gpu must not import agent"),
    "agent/proving/bad.py": (
        "def f():\n    from agent.service import Agent\n",
        "agent.proving (layer (1, 9)) must not import agent.service",
    ),
    "agent/proving/work.py": (
        "from agent.proving.pipeline import ProofPipeline\n",
        "agent.proving.work (layer (1, 1)) must not import agent.proving.pipeline",
    ),
    "agent/stages.py": ("from agent.runtime import agent_settings\n", "agent.stages (layer (2,)) must not"),
    "agent/store.py": ("from agent.cli.common import fail\n", "agent.store (layer (0,)) must not import"),
    "agent/preflight.py": (
        "def f():\n    from agent.runtime import build_prover\n",
        "agent.preflight (layer (0, 5)) must not import agent.runtime",
    ),
    "agent/paramfiles.py": (
        "from agent.proving.pipeline import ProofPipeline\n",
        "agent.paramfiles (layer (0, 5)) must not import agent.proving.pipeline",
    ),
    # the arrows #48 took out: the configuration and the parameter files' kinds below the proving wing, the
    # sparse sector (SDR work) beside the vanilla proofs and not in the C1 package
    "agent/config.py": (
        "from agent.proving.parameters import params_paths\n",
        "agent.config (layer (0,)) must not import agent.proving.parameters",
    ),
    "agent/host.py": ("def f():\n    from agent.admission import HostBudget\n", "agent.host (layer (-1,))"),
    "agent/preflight.py#2": (
        "from agent.proving.parameters import CheckedParams\n",
        "agent.preflight (layer (0, 5)) must not import agent.proving.parameters",
    ),
    "porep/c1/sparse.py": (
        "from porep.sdr import challenges\n",
        "porep.c1 (layer (1,)) must not import porep.sdr",
    ),
    "porep/c1/made.py": ("def f():\n    from porep.hashes import poseidon\n", "porep.c1 (layer (1,))"),
    "porep/ids.py": ("from porep.prooftypes import ProofType\n", "porep.ids (layer (0, 0)) must not import"),
    "porep/circuit/z.py": ("from porep.snap import params\n", "porep.circuit (layer (2,)) must not import"),
    # the rooms that came with device memory, progress, the engine's priorities and PoSt
    "porep/snap/up.py": (
        "from porep.post.params import PoStProofType\n",
        "porep.snap (layer (3,)) must not import porep.post",
    ),
    "porep/post/up.py": ("from agent.proving.work import Work\n", "porep must not import agent"),
    "gpu/memory.py": (
        "from gpu.device import Device\n",
        "gpu.memory (layer (0, 4)) must not import gpu.device",
    ),
    "gpu/arith/ledger.py": ("import gpu.memory\n", "gpu.arith (layer (0, 3)) must not import gpu.memory"),
    "gpu/groth16/budget.py": (
        "def f():\n    from gpu.bench import run\n",
        "gpu.groth16 (layer (3,)) must not import gpu.bench",
    ),
    "agent/opsview/progress.py": (
        "from agent.proving.result import StageEvent\n",
        "agent.opsview.progress (layer (0, 6, 0)) must not import agent.proving.result",
    ),
    # the operator's view in one package below the proving wing and the service (#48 item 2)
    "agent/opsview/document.py": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agent.service import Agent\n",
        "agent.opsview.document (layer (0, 6, 2)) must not import agent.service",
    ),
    "agent/opsview/metrics.py": (
        "def f():\n    from agent.proving.prover import AdmittedProver\n",
        "agent.opsview.metrics (layer (0, 6, 1)) must not import agent.proving.prover",
    ),
    "agent/opsview/gate.py": (
        "from agent.opsview.report import status_report\n",
        "agent.opsview.gate (layer (0, 6, 0)) must not import agent.opsview.report",
    ),
    "agent/cuzk/scheduler.py": (
        "from agent.cuzk.jobs import Jobs\n",
        "agent.cuzk.scheduler (layer (3, 0)) must not import agent.cuzk.jobs",
    ),
    "agent/proving/circuits.py": (
        "from agent.proving.pipeline import ProofPipeline\n",
        "agent.proving.circuits (layer (1, 2)) must not import agent.proving.pipeline",
    ),
}
ALLOWED = {
    "porep/ok.py": (
        "from gpu.arith.fields import fr_add\nfrom porep.hashes import merkle\n"
        "from gpu.files import atomic_write\n"
    ),
    "porep/circuit/ok.py": "from gpu.groth16.r1cs import R1CS\nfrom gpu.arith import cpupool\n",
    "market/mock/ok.py": "from gpu.groth16 import verifier\nimport porep\n",
    "gpu/groth16/ok.py": "from gpu.msm import msm\nfrom gpu.arith.fields import fr_add\nfrom . import r1cs\n",
    "agent/runtime.py": "import gpu.groth16.prover\nimport market\nfrom agent.proving import prover\n",
    "agent/proving/prover.py": "from agent.proving.pipeline import ProofPipeline\nimport agent.admission\n",
    "agent/service.py": "from agent.opsview.gate import Gate\nfrom agent.opsview import metrics\n",
}


NAMED = (
    "gpu/groth16/prover.py",
    "gpu/groth16/r1cs.py",
    "gpu/groth16/verifier.py",
    "gpu/groth16/params.py",
    "gpu/ntt/tables.py",
    "gpu/msm/__init__.py",
    "gpu/curves/g1.py",
    "gpu/arith/fields/__init__.py",
    "gpu/arith/cpupool.py",
    "porep/hashes/merkle.py",
    "porep/hashes/poseidon.py",
    "porep/sdr/challenges.py",
    "porep/snap/params.py",
    "porep/prooftypes.py",
    "agent/proving/parameters.py",
    "agent/admission.py",
    "agent/cli/__init__.py",
    "agent/cli/common.py",
    "agent/service.py",
    "agent/proving/pipeline.py",
    "agent/opsview/metrics.py",
)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for top in OURS:
        (tmp_path / top).mkdir(exist_ok=True)
        (tmp_path / top / "__init__.py").touch()
    for rel, text in files.items():
        f = tmp_path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        for d in f.relative_to(tmp_path).parents:
            if str(d) != "." and not (tmp_path / d / "__init__.py").exists():
                (tmp_path / d / "__init__.py").touch()
        f.write_text(text)
    # the modules the planted files name, so that ``from a import b`` resolves like in the real tree
    for rel in NAMED:
        f = tmp_path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        for d in f.relative_to(tmp_path).parents:
            if str(d) != ".":
                (tmp_path / d / "__init__.py").touch()
        f.touch()
    return tmp_path


@pytest.mark.parametrize("rel", sorted(PLANTED))
def test_a_planted_violation_fails(tmp_path: Path, rel: str) -> None:
    text, why = PLANTED[rel]
    path = rel.partition("#")[0]  # "file#n": a further case planted in the same file
    bad = violations(_tree(tmp_path, {path: text}))
    assert len(bad) == 1 and bad[0].startswith(path) and why in bad[0], bad


def test_allowed_imports_pass(tmp_path: Path) -> None:
    assert violations(_tree(tmp_path, ALLOWED)) == []


def test_a_planted_cycle_fails(tmp_path: Path) -> None:
    files = {"porep/a.py": "def f():\n    from porep import b\n", "porep/b.py": "import porep.a\n"}
    tree = _tree(tmp_path, files)
    assert violations(tree) == ["import cycle: porep.a ↔ porep.b"]


# Modules a command imports before it reads its configuration, whose engine options place Numba's kernel cache
# (agent.cli.common.enable_kernel_cache; numba reads NUMBA_CACHE_DIR once, when first imported): they import
# what loads numba inside functions, the only function-local imports of ours kept for that reason.
BEFORE_THE_KERNEL_CACHE = (
    "agent.cli",
    "agent.config",
    "agent.fleet",
    "agent.preflight",
    "agent.proving.parameters",
    "agent.proving.plan",
    "agent.proving.verifier",
)


def test_what_a_command_imports_before_its_configuration_loads_no_numba() -> None:
    import subprocess
    import sys

    code = (
        f"import sys\nimport {', '.join(BEFORE_THE_KERNEL_CACHE)}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numba'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]", out.stdout
