"""The workflow on a real Slurm cluster, through snakemake-executor-plugin-slurm.

    python -m pytest -q -m slurm tests/test_slurm.py    # CI's Slurm step (.ci/run), a few minutes

`TestSlurmRun` brings up a one-node Slurm 22.05 on this machine (munged, slurmctld and slurmd as
background daemons, installed with apt-get when missing and run as root; no systemd, no
cgroups, no accounting), runs the smoke profile through the paper with
``--profile workflow/profiles/slurm`` in a copy of the repository, and checks Slurm's own record
of the jobs (the controller's log, ``scontrol show job``, the job output files Slurm wrote), that
the rendered paper verifies, and that the tables equal the local smoke run's (``smoke_run``,
conftest.py). The daemons are stopped by PID afterwards and the configuration it wrote is
removed. It is marked ``slurm`` and left out of the default suite (pyproject.toml: it takes
minutes); it skips with the reason where Slurm cannot be installed or started, and fails instead
when ``CLERK_REQUIRE_SLURM=1`` (CI). `TestSlurmDryRun` (default suite, seconds) needs only the
plugin: a dry run of the Slurm profile with no cluster anywhere.

Facts this relies on (measured on a real one-node Slurm): the plugin's default status command (sacct) never sees
a job end without accounting, so the profile uses squeue; the plugin's jobstep clears ``SLURM_*``
before its inner ``srun``, so the configuration must sit at the default /etc/slurm/slurm.conf;
Snakemake ignores SIGTERM while jobs run, so every run is bounded by ``timeout -k``.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from workflow_kit import OFFLINE, ROOT, SMOKE, copy_sources, run_snakemake

from clerk.wiring import BENCHMARK_ROOT, LOG_ROOT

SLURM_DIR = Path("/etc/slurm")
# The first line of every file this test writes under /etc: it never overwrites any other.
MARK = "# written by clerk tests/test_slurm.py; removed when the test ends"
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
PROGRAMS = ["slurmctld", "slurmd", "munged", "munge", "sbatch", "squeue", "sinfo", "scontrol"]
PARTITION = "debug"  # the Slurm profile's default partition (workflow/profiles/slurm)
# Ports off Slurm's defaults (6817/6818), so a cluster of the machine's own is never reached.
CTLD_PORT, SLURMD_PORT = 16817, 16818
# Bounds, in seconds: the whole Slurm run of the smoke DAG, and the daemons' start-up.
RUN_LIMIT, START_LIMIT = 1200, 60
SLURM_PROFILE = ["--profile", "workflow/profiles/slurm"]
# One GPU for train: the test node declares gpu:1 on /dev/null (scheduling only, no GPU code runs)
# so that the --gpus path of the plugin is exercised even on a machine without a GPU.
GPU_RULE = "train"
# The smoke profile's jobs outside the two groups, per rule (two seeds; the one reader adapter of
# its own seed is built and trained once: evaluate.reader_model `reader`, reader.seed)
MODEL_JOBS = {"rule_build_sft_reader": 1, "rule_train": 2, "rule_train_reader": 1,
              "rule_evaluate": 4, "rule_erasure": 2, "rule_learning_curve": 1, "rule_locomo": 2,
              "rule_locomo_shared": 1}


def _fail_or_skip(reason: str):
    """Skip with ``reason``; in CI (``CLERK_REQUIRE_SLURM=1``) fail, since CI must run this."""
    if os.environ.get("CLERK_REQUIRE_SLURM") == "1":
        pytest.fail(f"CLERK_REQUIRE_SLURM=1 but {reason}")
    pytest.skip(reason)


def _which(program: str) -> str | None:
    return shutil.which(program, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")


def _ensure_installed() -> None:
    """Install Slurm and munge with apt-get where they are missing and we are root."""
    missing = [p for p in PROGRAMS if _which(p) is None]
    if not missing:
        return
    if os.geteuid() != 0 or _which("apt-get") is None:
        _fail_or_skip(f"Slurm is not installed (missing {', '.join(missing)}) and installing it "
                      "needs root and apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["timeout", "-k", "10", "300", "apt-get", "install", "-y", "-q",
               "--no-install-recommends", *PACKAGES]
    proc = subprocess.run(install, capture_output=True, text=True, env=env)
    if proc.returncode != 0:  # a stale package index: refresh it once
        subprocess.run(["timeout", "-k", "10", "300", "apt-get", "update", "-q"],
                       capture_output=True, env=env)
        proc = subprocess.run(install, capture_output=True, text=True, env=env)
    missing = [p for p in PROGRAMS if _which(p) is None]
    if proc.returncode != 0 or missing:
        _fail_or_skip(f"apt-get could not install {' '.join(PACKAGES)}: {proc.stderr[-500:]}")


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


def _node_line() -> str:
    """This machine as a Slurm node (``slurmd -C``: CPUs, sockets, cores, threads, memory)."""
    proc = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True, timeout=30)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("NodeName=")), None)
    if line is None:
        _fail_or_skip(f"slurmd -C did not describe this machine: {proc.stdout}{proc.stderr}")
    return line.split(" UpTime=")[0]


def _slurm_conf(state: Path, node: str) -> str:
    host = node.split()[0].removeprefix("NodeName=")
    return "\n".join([
        MARK,
        "ClusterName=clerk-test",
        f"SlurmctldHost={host}",
        f"SlurmctldPort={CTLD_PORT}",
        f"SlurmdPort={SLURMD_PORT}",
        "SlurmUser=root",
        "AuthType=auth/munge",
        f"StateSaveLocation={state}/ctld",
        f"SlurmdSpoolDir={state}/slurmd",
        f"SlurmctldPidFile={state}/slurmctld.pid",
        f"SlurmdPidFile={state}/slurmd.pid",
        f"SlurmctldLogFile={state}/slurmctld.log",
        f"SlurmdLogFile={state}/slurmd.log",
        # No cgroups on this machine (a container without systemd): plain process tracking.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SchedulerType=sched/backfill",
        # CPUs are the consumable (2 jobs at a time on 2 cores, like `--cores 2` locally); memory
        # requests are checked against the node's RealMemory, not reserved.
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        # Finished jobs stay in the controller (squeue, scontrol show job) this long: the profile's
        # status command needs it, and the test reads every job's record after the run.
        "MinJobAge=3600",
        "ReturnToService=2",
        "GresTypes=gpu",
        f"{node} Gres=gpu:1 State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


@dataclass
class Cluster:
    """A running one-node Slurm: its state directory and the processes this test started."""

    state: Path
    written: list[Path] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def ctld_log(self) -> Path:
        return self.state / "slurmctld.log"

    def stop(self) -> None:
        """Cancel what is left of the jobs, stop the daemons by PID (last started first) and
        remove the configuration files this test wrote."""
        if any(p.poll() is None for p in self.procs):
            subprocess.run(["timeout", "-k", "5", "20", "scancel", "--full", "--user", "root"],
                           capture_output=True)
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=15)
        for path in self.written:
            if path.is_file() and path.read_text().startswith(MARK):
                path.unlink()


def _munge_works() -> bool:
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
        if cred.returncode != 0:
            return False
        return subprocess.run(["unmunge"], input=cred.stdout, capture_output=True,
                              timeout=10).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _wait(predicate, limit: float, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    tail = log.read_text()[-2000:] if log and log.is_file() else ""
    _fail_or_skip(f"{what} within {limit} s\n{tail}")


def _start(cluster: Cluster, argv: list[str], log: Path, **kwargs) -> subprocess.Popen:
    """Start one daemon in the foreground (so that its PID is the Popen's) in its own session."""
    out = log.open("ab")
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, **kwargs)
    out.close()
    cluster.procs.append(proc)
    return proc


def _node_state() -> str:
    proc = subprocess.run(["timeout", "-k", "2", "10", "sinfo", "-h", "-N", "-o", "%T"],
                          capture_output=True, text=True)
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """Slurm and munge installed, configured at /etc/slurm and started; stopped afterwards."""
    if os.geteuid() != 0:
        _fail_or_skip("the test cluster's daemons run as root (SlurmUser=root); this is not root")
    _ensure_installed()
    for path in (SLURM_DIR / "slurm.conf", SLURM_DIR / "gres.conf"):
        if path.exists() and not path.read_text().startswith(MARK):
            _fail_or_skip(f"{path} is this machine's own Slurm configuration; not overwriting it")
    for port in (CTLD_PORT, SLURMD_PORT):
        if not _port_free(port):
            _fail_or_skip(f"port {port} (the test cluster's) is in use")
    state = tmp_path_factory.mktemp("slurm")
    for sub in ("ctld", "slurmd"):
        (state / sub).mkdir()
    cluster = Cluster(state=state)
    try:
        # 1. munge: reuse a working munged, else start one as the munge user (key 0600 owned by
        #    munge, socket directory 0755), in the foreground.
        if not _munge_works():
            key = Path("/etc/munge/munge.key")
            if not key.is_file():
                if _which("mungekey") is None:
                    _fail_or_skip(f"{key} is missing and there is no mungekey to create it")
                subprocess.run([_which("mungekey"), "--create", "--keyfile", str(key)], check=True,
                               capture_output=True, timeout=30)
            shutil.chown(key, "munge", "munge")
            key.chmod(0o600)
            rundir = Path("/run/munge")
            rundir.mkdir(parents=True, exist_ok=True)
            shutil.chown(rundir, "munge", "munge")
            rundir.chmod(0o755)
            _start(cluster, [_which("munged"), "--foreground"], state / "munged.out",
                   user="munge", group="munge")
            _wait(_munge_works, START_LIMIT, "munged did not start", state / "munged.out")
        # 2. The configuration at the default path (the jobstep's srun finds it only there).
        SLURM_DIR.mkdir(exist_ok=True)
        for name, text in (("slurm.conf", _slurm_conf(state, _node_line())),
                           ("gres.conf", f"{MARK}\nName=gpu File=/dev/null\n")):
            (SLURM_DIR / name).write_text(text)
            cluster.written.append(SLURM_DIR / name)
        # 3. The controller (-c: no state from a previous run), then the node daemon.
        _start(cluster, [_which("slurmctld"), "-D", "-c"], state / "slurmctld.out")
        _start(cluster, [_which("slurmd"), "-D"], state / "slurmd.out")
        _wait(lambda: _node_state() == "idle", START_LIMIT, "the node did not become idle",
              state / "slurmctld.log")
        yield cluster
    finally:
        cluster.stop()


@dataclass
class SlurmRun:
    """A finished Slurm run: its directory, wall time, Snakemake's output and Slurm's record of
    each of its jobs (``scontrol -o show job``: job id -> fields)."""

    workdir: Path
    wall_s: float
    output: str
    jobs: dict[str, dict[str, str]]


def _scontrol_jobs() -> dict[str, dict[str, str]]:
    """Every job the controller still holds (MinJobAge keeps finished ones), as fields."""
    proc = subprocess.run(["timeout", "-k", "5", "30", "scontrol", "-o", "show", "job"],
                          capture_output=True, text=True)
    jobs = {}
    for line in proc.stdout.splitlines():
        fields = dict(re.findall(r"(\S+?)=(\S*)", line))
        if "JobId" in fields:
            jobs[fields["JobId"]] = fields
    return jobs


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster, smoke_run, tmp_path_factory) -> SlurmRun:
    """The smoke profile through the paper as Slurm jobs, in a fresh copy of the sources.

    ``smoke_run`` (the local run, once per session) comes first so that the two never compete
    for the two cores. The first status check comes 5 s after submission (the profile's 20 s
    suits a real cluster's queue; on one idle node it would dominate), and `train` asks for the
    test node's GPU.
    """
    dest = copy_sources(tmp_path_factory.mktemp("slurm-run") / "repo")
    args = [*SLURM_PROFILE, *SMOKE, "--slurm-init-seconds-before-status-checks", "5",
            "--set-resources", f"{GPU_RULE}:gpu=1"]
    start = time.monotonic()
    proc = subprocess.run(
        ["timeout", "-k", "30", str(RUN_LIMIT), "snakemake", *args], cwd=dest,
        capture_output=True, text=True, env={**os.environ, **OFFLINE},
    )
    wall = time.monotonic() - start
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, (
        f"exit {proc.returncode} after {wall:.0f} s (124: timed out)\n" + output[-6000:]
        + "\nslurmctld log:\n" + slurm_cluster.ctld_log.read_text()[-3000:]
    )
    jobs = {i: r for i, r in _scontrol_jobs().items() if r.get("WorkDir") == str(dest)}
    print(f"\nSlurm smoke run: {wall:.1f} s wall, {len(jobs)} Slurm jobs")
    return SlurmRun(workdir=dest, wall_s=wall, output=output, jobs=jobs)


def _megabytes(value: str) -> int:
    """Slurm's memory notation (``768M``, ``10G``) in MB."""
    return int(float(value[:-1]) * {"M": 1, "G": 1024, "T": 1024 * 1024}[value[-1]])


def _minutes(value: str) -> int:
    """Slurm's time limit notation (``[D-]HH:MM:SS``) in minutes."""
    days, _, clock = value.rpartition("-")
    hours, minutes, _ = map(int, clock.split(":"))
    return (int(days or 0) * 24 + hours) * 60 + minutes


def _log_dir(job: dict[str, str], workdir: Path) -> str:
    """The plugin's log directory of a Slurm job (``rule_train``, ``group_prep_...``), from the
    job's StdOut path in Slurm's record."""
    return Path(job["StdOut"]).relative_to(workdir / ".snakemake/slurm_logs").parts[0]


def _rules_run(workdir: Path) -> set[str]:
    """Rules of a finished run: the ones that wrote a log under logs/ (every rule has one); the
    rule benchmarks' root (logs/benchmarks/) is not a rule."""
    benchmarks = workdir / BENCHMARK_ROOT
    return {p.name for p in (workdir / LOG_ROOT).iterdir() if p.is_dir() and p != benchmarks}


# Measured times: two runs of the same DAG differ there and nowhere else. Whole files (the rule
# benchmarks); CSV columns whose name says seconds (wall_seconds, wall_seconds_mean, ...);
# Markdown columns headed "wall s" and rows labelled with seconds (setup: train.seconds_mean).
TIME_FILES = {"benchmarks.csv", "benchmarks.md"}
TIME_MD_HEADER = "wall s"


def _without_times(path: Path) -> str:
    """A table's text with its measured-time columns and rows taken out (see above); the text
    itself when it has none."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        rows = list(csv.reader(io.StringIO(text)))
        keep = [i for i, name in enumerate(rows[0]) if "seconds" not in name]
        if len(keep) == len(rows[0]):
            return text
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([[r[i] for i in keep] for r in rows])
        return out.getvalue()
    lines, drop = [], set()
    for line in text.splitlines(keepends=True):
        if not line.startswith("|"):
            drop = set()  # a table ended
            lines.append(line)
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if TIME_MD_HEADER in cells:
            drop = {i for i, c in enumerate(cells) if c == TIME_MD_HEADER}
        if "seconds" in cells[0]:
            continue
        if drop:
            line = "|".join(c for i, c in enumerate(cells) if i not in drop) + "\n"
        lines.append(line)
    return "".join(lines)


@pytest.mark.slurm
class TestSlurmRun:
    def test_every_rule_ran_inside_a_slurm_job(self, slurm_run, slurm_cluster, smoke_run):
        """Slurm's own record: the controller logged each submission, each job ran in the run's
        directory and COMPLETED, and the job outputs Slurm wrote (the plugin's logs) show every
        rule of the local run finishing inside them; the preparation and the report stage are
        one group job each, the model jobs one job per rule job."""
        submitted = set(re.findall(r"_slurm_rpc_submit_batch_job: JobId=(\d+)",
                                   slurm_cluster.ctld_log.read_text()))
        assert slurm_run.jobs and set(slurm_run.jobs) <= submitted
        assert {job["JobState"] for job in slurm_run.jobs.values()} == {"COMPLETED"}
        finished: set[str] = set()
        for job in slurm_run.jobs.values():
            text = Path(job["StdOut"]).read_text()
            finished |= set(re.findall(r"^Finished jobid: \d+ \(Rule: (\w+)\)", text, re.M))
        assert finished == _rules_run(smoke_run) - {"all"}
        kinds: dict[str, int] = {}
        for job in slurm_run.jobs.values():
            kind = _log_dir(job, slurm_run.workdir).split("_")
            kind = "_".join(kind[:2]) if kind[0] == "group" else "_".join(kind)
            kinds[kind] = kinds.get(kind, 0) + 1
        assert kinds == {"group_prep": 1, **MODEL_JOBS, "group_report": 1}

    def test_slurm_allocated_what_the_rules_declare(self, slurm_run):
        """Each model job's Slurm allocation is the rule's declared mem_mb, runtime and one CPU;
        train (and only train) holds the node's GPU."""
        declared = {}  # snakemake job id -> (rule, resources line)
        for rule, jobid, resources in re.findall(
            r"^rule (\w+):\n(?:.*\n)*?\s+jobid: (\d+)\n(?:.*\n)*?\s+resources: (.*)\n",
            slurm_run.output, flags=re.M,
        ):
            declared[jobid] = (rule, resources)
        submitted = dict(re.findall(r"^Job (\d+) has been submitted with SLURM jobid (\d+)",
                                    slurm_run.output, flags=re.M))
        # one Slurm job per model rule job; the two group jobs are not numbered
        assert len(submitted) == sum(MODEL_JOBS.values())
        for jobid, slurm_id in submitted.items():
            rule, resources = declared[jobid]
            job = slurm_run.jobs[slurm_id]
            mem_mb = int(re.search(r"\bmem_mb=(\d+)", resources).group(1))
            runtime = int(re.search(r"\bruntime=(\d+)", resources).group(1))
            assert _megabytes(job["MinMemoryNode"]) == mem_mb, (rule, job["MinMemoryNode"])
            assert _minutes(job["TimeLimit"]) == runtime, (rule, job["TimeLimit"])
            assert job["NumCPUs"] == "1", (rule, job["NumCPUs"])
            assert (job.get("TresPerJob") == "gres:gpu:1") == (rule == GPU_RULE), (rule, job)

    def test_rendered_paper_verifies(self, slurm_run):
        """`clerk verify` passes on the Slurm run: every file hashes to its manifest entry and
        every number of the paper to its source."""
        proc = subprocess.run(["timeout", "-k", "5", "120", "clerk", "verify"],
                              cwd=slurm_run.workdir, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    def test_tables_equal_the_local_run(self, slurm_run, smoke_run):
        """Every results/*.csv and *.md table is byte-identical to the local smoke run's; a table
        with measured wall times in it is byte-identical once those columns and rows are set
        aside (the rule benchmarks, nothing but times, are not compared)."""
        def tables(workdir: Path) -> list[str]:
            return sorted(p.name for p in (workdir / "results").glob("*")
                          if p.suffix in {".csv", ".md"} and p.name not in TIME_FILES)

        names = tables(smoke_run)
        assert names == tables(slurm_run.workdir) and len(names) >= 15
        for name in names:
            local, slurm = smoke_run / "results" / name, slurm_run.workdir / "results" / name
            if _without_times(local) == local.read_text(encoding="utf-8"):  # no times in it
                assert slurm.read_bytes() == local.read_bytes(), name
            else:
                assert _without_times(slurm) == _without_times(local), name


class TestSlurmDryRun:
    def test_dry_run_needs_no_cluster(self, tmp_path):
        """`snakemake -n --profile workflow/profiles/slurm` plans the smoke DAG with no Slurm
        running, and every job carries the sized resources (train: 3584 MB, 80 min, the
        profile's partition)."""
        pytest.importorskip("snakemake_executor_plugin_slurm")
        proc = run_snakemake(ROOT, "-n", *SLURM_PROFILE, *SMOKE, "--forceall", timeout=300)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        assert "Using profiles workflow/profiles/slurm" in out
        assert "Group job prep" in out and "Group job report" in out
        blocks = re.findall(r"^\s*rule (\w+):\n(.*?)(?=\n\s*\n|\Z)", out, flags=re.M | re.S)
        assert len(blocks) >= 40
        for rule, block in blocks:
            if rule == "all":
                continue
            resources = re.search(r"resources: (.*)", block).group(1)
            assert re.search(r"\bmem_mb=\d+", resources), (rule, resources)
            assert re.search(r"\bruntime=\d+", resources), (rule, resources)
            assert f"slurm_partition={PARTITION}" in resources, (rule, resources)
        train = dict(blocks)["train"]
        assert "mem_mb=3584" in train and "runtime=80" in train
        # every rule is either a model job submitted alone or a member of the prep or report
        # group, so a new report rule cannot become a Slurm job of its own unnoticed
        profile = yaml.safe_load((ROOT / "workflow/profiles/slurm/config.yaml").read_text())
        grouped = {entry.split("=")[0] for entry in profile["groups"]}
        alone = {name.removeprefix("rule_") for name in MODEL_JOBS}
        ungrouped = {rule for rule, _ in blocks} - grouped - alone - {"all"}
        assert not ungrouped, f"rules in no Slurm group and not model jobs: {sorted(ungrouped)}"
