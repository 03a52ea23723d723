"""The Ray backend of ``foliosim sweep``: a planned sweep's pending runs as Ray tasks.

    python -m foliosim.ray_backend --out DIR [--address ADDRESS]

``foliosim sweep --backend ray`` (the CLI) plans the sweep into DIR (plan.json) and runs this;
``foliosim.sweep(..., backend="ray")`` calls :func:`run`. Each task runs one scenario on a
worker (``foliosim._foliosim.sweep_run_json``: the same simulator as the local backend, so the
same numbers) and returns its record; the driver stores each record under DIR/runs/ as it
arrives, so the output directory need not be shared with the workers, and an interrupted
sweep keeps every run that finished.

Needs ``pip install ray`` and the foliosim package on the driver and on every node of the
cluster. ``address``: a running cluster (``ray start --head`` prints it); without one (and
without RAY_ADDRESS) a local Ray is started for the sweep, on the loopback address only, and
stopped after it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, Optional

from . import _foliosim


def _run_one(run_json: str) -> str:
    from foliosim import _foliosim as sim

    return sim.sweep_run_json(run_json)


def _import_ray(local: bool):
    if local and "ray" not in sys.modules:
        # A Ray started here serves this machine only: keep it on the loopback address.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError as e:
        raise RuntimeError("the Ray backend needs Ray: pip install ray (./setup.sh installs it)") from e
    return ray


def run(
    out: str,
    address: Optional[str] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> int:
    """Run the pending runs of the sweep planned in ``out`` on Ray; return how many ran.

    ``progress(done, total)`` is called as records are stored.
    """
    out = os.fspath(out)
    pending = json.loads(_foliosim.sweep_pending_json(out))
    if not pending:
        return 0
    local = address is None and not os.environ.get("RAY_ADDRESS")
    ray = _import_ray(local)
    started = False
    if not ray.is_initialized():
        if local:
            ray.init(include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
        started = True
    try:
        # Runs are deterministic: a task retried after a lost worker gives the same record.
        task = ray.remote(num_cpus=1)(_run_one)
        waiting = [task.remote(json.dumps(spec)) for spec in pending]
        done = 0
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            for ref in ready:
                try:
                    record = ray.get(ref)
                except Exception:
                    for r in waiting:
                        ray.cancel(r)
                    raise
                _foliosim.sweep_store_record(out, record)
                done += 1
                if progress is not None:
                    progress(done, len(pending))
        return len(pending)
    finally:
        if started:
            ray.shutdown()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m foliosim.ray_backend", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the sweep's output directory (with plan.json)")
    p.add_argument("--address", default=None, help="Ray cluster address (default: RAY_ADDRESS or a local Ray)")
    args = p.parse_args(argv)
    try:
        n = run(args.out, address=args.address)
    except (RuntimeError, ValueError) as e:
        print(f"foliosim.ray_backend: {e}", file=sys.stderr)
        return 1
    print(f"foliosim.ray_backend: {n} runs done on Ray", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
