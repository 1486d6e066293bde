"""Ray's side of bench/peers.py, run in the peers' venv: two actors, a caller and an echo.

    python bench/peers_ray.py --n 2000 --seconds 3     (prints one JSON line)

A local Ray cluster (started here, stopped at the end); the caller actor times its calls to
the echo actor, so the round trip is actor to actor, like robot to robot.
"""

import argparse
import json
import time
from pathlib import Path

import ray

BENCH = str(Path(__file__).resolve().parent)
WINDOW = 8


@ray.remote
class EchoActor:
    def echo(self, body: dict) -> dict:
        return body


@ray.remote
class CallerActor:
    def __init__(self, echo: "ray.actor.ActorHandle") -> None:
        self.echo = echo

    def measure(self, n: int, seconds: float) -> dict[str, float]:
        from bus import PAYLOAD, latency  # the worker finds bench/ through runtime_env's PYTHONPATH

        p50, p99 = latency(lambda i: ray.get(self.echo.echo.remote(PAYLOAD)), n)
        window = [self.echo.echo.remote(PAYLOAD) for _ in range(WINDOW)]
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            ray.get(window.pop(0))
            done += 1
            window.append(self.echo.echo.remote(PAYLOAD))
        rate = done / (time.perf_counter() - start)
        ray.get(window)
        return {"p50": p50, "p99": p99, "rate": rate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": BENCH}})
    try:
        echo = EchoActor.remote()
        caller = CallerActor.remote(echo)
        print(json.dumps(ray.get(caller.measure.remote(args.n, args.seconds))), flush=True)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
