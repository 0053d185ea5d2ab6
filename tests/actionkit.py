"""The repository's composite action (action.yml) and the workflow docs/ci.md gives for it, read as
GitHub Actions reads them, and the action's shell steps run as a runner would: its `${{ ... }}`
expressions of inputs, github and earlier steps' outputs substituted, `if: inputs.X == 'Y'` decided,
each step's env and working directory set, GITHUB_OUTPUT read back. A `uses:` step (the artefact
upload) is another action's and is skipped."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
DOC = ROOT / "docs" / "ci.md"
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")
CONDITION = re.compile(r"^inputs\.([\w-]+) == '([^']*)'$")


def action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return data


def documented_workflow() -> dict[str, Any]:
    """The workflow of docs/ci.md's section on the action: the YAML block that uses it."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    found = [b for b in blocks if re.search(r"uses: OWNER/pytest-kernelperf@", b)]
    assert len(found) == 1, f"expected one workflow in docs/ci.md that uses the action, found {len(found)}"
    data: dict[str, Any] = yaml.safe_load(found[0])
    return data


def action_step(workflow: Mapping[str, Any]) -> dict[str, Any]:
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    (step,) = [s for s in steps if str(s.get("uses", "")).startswith("OWNER/pytest-kernelperf@")]
    return dict(step)


@dataclass
class Run:
    status: int  # the last step's exit status: the job's
    log: str


def _substitute(text: str, context: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match[1]
        if name in context:
            return context[name]
        if name.startswith("steps."):  # a step that did not run, or set no such output: empty
            return ""
        raise KeyError(f"the simulation does not know {name!r}")

    return EXPRESSION.sub(value, text)


def _decide(condition: str, inputs: Mapping[str, str]) -> bool:
    found = CONDITION.match(condition.strip())
    if found is None:
        raise ValueError(f"the simulation decides only `inputs.X == 'Y'`, not {condition!r}")
    return inputs[found[1]] == found[2]


def run_action(
    given: Mapping[str, str], *, github: Mapping[str, str], environ: Mapping[str, str], workspace: Path
) -> Run:
    """The action's steps with the inputs `given` (the rest at their defaults), as on a runner."""
    spec = action()
    inputs = {name: str(field.get("default", "")) for name, field in spec["inputs"].items()}
    context = {f"github.{k}": v for k, v in github.items()}
    context.update({"github.action_path": str(ROOT)})
    for name, default in inputs.items():
        inputs[name] = _substitute(given.get(name, default), context)
    context.update({f"inputs.{k}": v for k, v in inputs.items()})
    log, status = [], 0
    for index, step in enumerate(spec["runs"]["steps"]):
        if "if" in step and not _decide(step["if"], inputs):
            continue
        if "uses" in step:
            log.append(f"(skipped {step['uses']})")
            continue
        output = workspace / f".output-{index}"
        output.write_text("")
        env = {**environ, **{k: _substitute(str(v), context) for k, v in step.get("env", {}).items()}}
        env["GITHUB_OUTPUT"] = str(output)
        cwd = workspace / _substitute(step.get("working-directory", "."), context)
        done = subprocess.run(
            ["bash", "-e", "-c", _substitute(step["run"], context)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        log.append(f"--- {step.get('name', index)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        status = done.returncode
        if status != 0:
            break
        for line in output.read_text().splitlines():
            key, _, value = line.partition("=")
            context[f"steps.{step.get('id', index)}.outputs.{key}"] = value
    return Run(status, "\n".join(log))


def expressions(text: str) -> set[str]:
    return set(EXPRESSION.findall(text))


def inputs_referenced() -> set[str]:
    """The inputs the action's steps use: in `${{ }}` expressions and in `if:` conditions."""
    spec = action()
    found = {e for e in expressions(ACTION.read_text(encoding="utf-8")) if e.startswith("inputs.")}
    found |= {s["if"] for s in spec["runs"]["steps"] if "if" in s}
    return {name for text in found for name in re.findall(r"inputs\.([\w-]+)", text)}


def environment_without_github() -> dict[str, str]:
    """This process's environment, less what a CI job running these tests set for itself."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
