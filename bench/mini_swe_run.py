"""One bounded mini-swe-agent run on one repository, for bench/robot_to_real.py.

Runs under mini-swe-agent's own interpreter (its separate venv), never the project's: it
imports nothing from robotlab. It builds mini-swe-agent's ``DefaultAgent`` (the plain loop,
no confirmation prompts) with the bash-only, text-based model (``LitellmTextbasedModel``: one
```mswea_bash_command``` block a reply, the mode its ``mini_textbased.yaml`` documents for
servers without structured tool calls, which the local llama.cpp server is) and its
``LocalEnvironment`` in the repository, bounded by a step limit and a wall limit, cost
tracking off (a local model has no price). Prints one JSON line: exit status, steps, tokens.

Usage: ``MINI_PYTHON bench/mini_swe_run.py --repo DIR --task TEXT --model M --api-base URL``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import yaml
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import builtin_config_dir
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel


def build(args: argparse.Namespace) -> DefaultAgent:
    """The agent, with mini_textbased.yaml's prompts and environment and our bounds."""
    config = yaml.safe_load((Path(builtin_config_dir) / "mini_textbased.yaml").read_text())
    model_config = {**config["model"], "model_kwargs": {**config["model"].get("model_kwargs", {}),
                                                        "api_base": args.api_base,
                                                        "api_key": "none",
                                                        "timeout": args.call_timeout,
                                                        "max_tokens": args.max_tokens}}
    model = LitellmTextbasedModel(model_name=args.model, cost_tracking="ignore_errors",
                                  **model_config)
    env = LocalEnvironment(cwd=args.repo, env=config["environment"]["env"], timeout=60)
    agent = config["agent"]
    return DefaultAgent(model, env, system_template=agent["system_template"],
                        instance_template=agent["instance_template"], step_limit=args.step_limit,
                        cost_limit=0, wall_time_limit_seconds=args.wall_limit,
                        output_path=Path(args.trajectory) if args.trajectory else None)


def tokens(messages: list[dict]) -> tuple[int, int]:
    """Prompt and completion tokens summed over the server's own usage figures."""
    prompt = completion = 0
    for message in messages:
        usage = ((message.get("extra") or {}).get("response") or {}).get("usage") or {}
        prompt += usage.get("prompt_tokens") or 0
        completion += usage.get("completion_tokens") or 0
    return prompt, completion


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--model", required=True,
                        help="litellm model name, e.g. openai/qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--step-limit", type=int, default=15)
    parser.add_argument("--wall-limit", type=int, default=300,
                        help="seconds; checked before each model call")
    parser.add_argument("--call-timeout", type=float, default=300.0,
                        help="seconds, as robot-to's default")
    parser.add_argument("--max-tokens", type=int, default=512, help="longest reply")
    parser.add_argument("--trajectory", help="where to save the trajectory JSON")
    args = parser.parse_args()
    agent = build(args)
    started = time.monotonic()
    try:
        exit_info = agent.run(args.task)
        status = exit_info.get("exit_status", "")
    except Exception as exc:  # the run's outcome is data for the benchmark, whatever ended it
        status = f"{type(exc).__name__}: {exc}"
    prompt, completion = tokens(agent.messages)
    print(json.dumps({"exit_status": status, "steps": agent.n_calls, "prompt_tokens": prompt,
                      "completion_tokens": completion, "seconds": time.monotonic() - started}))


if __name__ == "__main__":
    main()
