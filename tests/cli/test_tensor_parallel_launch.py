#!/usr/bin/env python3
"""The ways a tensor-parallel group is started (docs/tensor-parallel.md), each
run for real on the emulated CUDA device with `astrai generate` on
stories260K: the processes a launcher would start, given the variables that
launcher sets (Open MPI's, Slurm's, a LeaderWorkerSet's), and two "machines"
(--nnodes 2 --node-rank 0/1, both on loopback here). Rank 0 must print the
greedy ids one GPU gives (which equal llama2.c's: cli_golden_cuda, and at 2
and 4 ranks cli_golden_cuda_tp2 and the docs' run), and every other process
must end with status 0 and print nothing on stdout. The launchers
themselves (mpirun, srun, Kubernetes) are not installed here: this is what
they would run, with what they would set.

Usage: test_tensor_parallel_launch.py PATH/TO/astrai SOURCE_ROOT
"""
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
from missing_data import missing  # noqa: E402

ASTRAI, SOURCE_ROOT = sys.argv[1], sys.argv[2]
SHARED = os.environ.get("ASTRAI_SHARED_DIR") or os.path.join(os.path.dirname(os.path.abspath(SOURCE_ROOT)), "shared")
MODEL = os.path.join(SHARED, "models/stories260K/stories260K.bin")
TOK512 = os.path.join(SHARED, "models/stories260K/tok512.bin")
HANG_GUARD = 300  # seconds: only so that a hang fails instead of blocking CI
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("ok     " if condition else "FAILED ") + name + ("" if condition else "\n       " + str(detail)[-1500:]),
          flush=True)


def generate_args(*extra):
    return [ASTRAI, "generate", "--model", MODEL, "--tokenizer", TOK512, "--prompt", "Once upon a time",
            "--max-tokens", "24", "--temperature", "0", "--backend", "cuda", "--cuda-dtype", "f32", "--print-ids",
            *extra]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_group(label, processes, want_ids):
    """processes: [(extra args, extra env)], the first being rank 0's."""
    running = []
    for args, env in processes:
        running.append(subprocess.Popen(generate_args(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env={**os.environ, **env}))
    outs = []
    for p in running:
        try:
            out, err = p.communicate(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        outs.append((p.returncode, out, err))
    code, out, err = outs[0]
    ids = out.strip().split("\n")[-1] if code == 0 and out.strip() else ""
    check(f"{label}: rank 0 prints one GPU's greedy ids", code == 0 and ids == want_ids, f"{code}: {ids!r}\n{err}")
    check(f"{label}: it ran on every rank", "-tp" in err, err)
    for i, (code, out, err) in enumerate(outs[1:], 1):
        check(f"{label}: process {i} ends with status 0 and prints nothing", code == 0 and out == "",
              f"{code}: {out!r}\n{err}")


def main():
    if not (os.path.exists(MODEL) and os.path.exists(TOK512)):
        if missing(f"{MODEL} and {TOK512} (set ASTRAI_SHARED_DIR)"):
            return 1
        return 77
    one = subprocess.run(generate_args(), capture_output=True, text=True, timeout=HANG_GUARD)
    check("one GPU", one.returncode == 0, one.stderr)
    want = one.stdout.strip().split("\n")[-1]

    port = free_port()
    mpi = lambda r: {"OMPI_COMM_WORLD_RANK": str(r), "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": str(r),
                     "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "MASTER_PORT": str(port)}
    run_group("mpirun -np 2", [(["--tensor-parallel", "2"], mpi(r)) for r in range(2)], want)

    port = free_port()
    slurm = lambda r: {"SLURM_PROCID": str(r), "SLURM_NTASKS": "3", "SLURM_LOCALID": str(r), "SLURM_NNODES": "1",
                       "MASTER_PORT": str(port)}
    # 3 ranks do not divide stories260K (8 heads): refused by every process, none hangs.
    refused = [subprocess.run(generate_args("--tensor-parallel", "3"), capture_output=True, text=True,
                              env={**os.environ, **slurm(r)}, timeout=HANG_GUARD) for r in range(2)]
    check("srun --ntasks 3 on a model 3 does not divide: refused before anything starts",
          all(r.returncode != 0 and "does not divide" in r.stderr for r in refused),
          [r.stderr[-300:] for r in refused])
    port = free_port()
    slurm4 = lambda r: {"SLURM_PROCID": str(r), "SLURM_NTASKS": "4", "SLURM_LOCALID": str(r), "SLURM_NNODES": "1",
                        "MASTER_PORT": str(port)}
    run_group("srun --ntasks 4", [(["--tensor-parallel", "4"], slurm4(r)) for r in range(4)], want)

    port = free_port()
    nodes = ["--tensor-parallel", "4", "--nnodes", "2", "--master-addr", "127.0.0.1", "--master-port", str(port)]
    run_group("two machines, two ranks each", [(nodes + ["--node-rank", str(k)], {}) for k in range(2)], want)

    port = free_port()
    lws = lambda k: {"LWS_WORKER_INDEX": str(k), "LWS_GROUP_SIZE": "2", "LWS_LEADER_ADDRESS": "127.0.0.1",
                     "MASTER_PORT": str(port)}
    run_group("a LeaderWorkerSet of two pods", [(["--tensor-parallel", "4"], lws(k)) for k in range(2)], want)

    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
