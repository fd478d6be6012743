"""hub/config.yaml, the Zero to JupyterHub values, checked without a cluster.

No Kubernetes, Helm or Docker here, and the chart's values schema is not on a
registry this project installs from (PyPI, npm, Debian). So every key path of
config.yaml is checked against the paths and types below, which were copied by
hand from the values.schema.yaml of the chart release 4.4.0 (JupyterHub 5.5.0)
on 2026-11-30. Only the paths this config uses are listed; an unknown path (a
typo, or a key the chart does not have) fails, as the chart's schema would fail
`helm install`. Then: the numbers agree with hub/jupyterhub_config.py, and the
image is the course environment with nbgitpuller in it.
"""

import ast
import json
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "hub" / "config.yaml"

# path -> JSON-schema types allowed (values.schema.yaml, chart 4.4.0)
SCHEMA_PATHS = {
    "hub.config": {"object"},
    "singleuser.image.name": {"string"},
    "singleuser.image.tag": {"string"},
    "singleuser.defaultUrl": {"string", "null"},
    "singleuser.startTimeout": {"integer", "null"},
    "singleuser.memory.guarantee": {"number", "string", "null"},
    "singleuser.memory.limit": {"number", "string", "null"},
    "singleuser.cpu.guarantee": {"number", "null"},
    "singleuser.cpu.limit": {"number", "null"},
    "singleuser.extraEnv": {"object", "array"},
    "singleuser.extraFiles": {"object"},
    "singleuser.storage.capacity": {"string", "null"},
    "singleuser.networkPolicy.enabled": {"boolean"},
    "singleuser.networkPolicy.egressAllowRules.nonPrivateIPs": {"boolean"},
    "cull.enabled": {"boolean"},
    "cull.timeout": {"integer", "null"},
    "cull.every": {"integer", "null"},
    "cull.users": {"boolean", "null"},
    "scheduling.userScheduler.enabled": {"boolean"},
    "prePuller.hook.enabled": {"boolean"},
}
# below these the chart takes any keys (traitlets config, env vars, files)
OPEN = ("hub.config", "singleuser.extraEnv", "singleuser.extraFiles")
EXTRA_FILE_KEYS = {"mountPath", "data", "stringData", "binaryData", "mode"}


def _json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _paths(node, prefix=""):
    """(path, value) for every key; open sections stop at their root."""
    for key, value in node.items():
        path = f"{prefix}.{key}" if prefix else key
        if path in OPEN or not isinstance(value, dict):
            yield path, value
        else:
            yield from _paths(value, path)


def values():
    return yaml.safe_load(CONFIG.read_text())


def test_every_key_path_is_in_the_charts_schema():
    for path, value in _paths(values()):
        assert path in SCHEMA_PATHS, f"{path}: not a key of the chart's values"
        kind = _json_type(value)
        if kind == "integer" and "number" in SCHEMA_PATHS[path]:
            kind = "number"
        assert kind in SCHEMA_PATHS[path], (
            f"{path}: {kind}, schema wants {SCHEMA_PATHS[path]}"
        )


def test_open_sections_have_the_shape_the_chart_expects():
    v = values()
    for name, section in v["hub"]["config"].items():
        # the schema's patternProperties: class names start with a capital
        assert re.match(r"^[A-Z]", name) and isinstance(section, dict), name
    for name, value in v["singleuser"]["extraEnv"].items():
        assert isinstance(value, str), f"extraEnv.{name} must be a string"
    for name, spec in v["singleuser"]["extraFiles"].items():
        assert set(spec) <= EXTRA_FILE_KEYS, (name, set(spec) - EXTRA_FILE_KEYS)
        assert spec["mountPath"].startswith("/"), name
        if "data" in spec:  # rendered by extension: .json, .yaml, .yml, .toml
            assert spec["mountPath"].endswith((".json", ".yaml", ".yml", ".toml"))


def _course_numbers():
    """MEM_GUARANTEE ... CPU_LIMIT from hub/jupyterhub_config.py."""
    tree = ast.parse((REPO / "hub" / "jupyterhub_config.py").read_text())
    names = {"MEM_GUARANTEE", "MEM_LIMIT", "CPU_GUARANTEE", "CPU_LIMIT"}
    return {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id in names
    }


def test_resources_and_culling_match_the_one_server_hub():
    v, numbers = values(), _course_numbers()
    single = v["singleuser"]
    assert single["memory"]["guarantee"] == numbers["MEM_GUARANTEE"]
    assert single["memory"]["limit"] == numbers["MEM_LIMIT"]
    assert single["cpu"]["guarantee"] == numbers["CPU_GUARANTEE"]
    assert single["cpu"]["limit"] == numbers["CPU_LIMIT"]
    assert single["extraEnv"] == {
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "JUPYTER_CONFIG_PATH": "/etc/jupyter/course",
    }
    # the students' config: the same files as hub/student-config/
    student = REPO / "hub" / "student-config"
    files = {
        spec["mountPath"].removeprefix("/etc/jupyter/course/"): spec["data"]
        for spec in single["extraFiles"].values()
        if spec["mountPath"].startswith("/etc/jupyter/course/")
    }
    assert files == {
        str(p.relative_to(student)): json.loads(p.read_text())
        for p in sorted(student.rglob("*.json"))
    }
    assert single["defaultUrl"] == "/lab"
    assert v["cull"]["enabled"] is True and v["cull"]["timeout"] == 3600
    culling = single["extraFiles"]["kernel-culling"]["data"]["MappingKernelManager"]
    local = (REPO / "hub" / "jupyterhub_config.py").read_text()
    for key, value in culling.items():
        flag = f"--MappingKernelManager.{key}={value}"
        assert flag.lower() in local.lower(), f"{flag} not in jupyterhub_config.py"


def test_the_image_is_the_course_environment_with_nbgitpuller():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip = next(d for d in env["dependencies"] if isinstance(d, dict))["pip"]
    requirements = [p.split(";")[0].strip() for p in pip]  # markers left out
    pins = dict(r.split("==") for r in requirements if "==" in r)
    assert {"nbgitpuller", "jupyterhub", "nbgrader"} <= set(pins)
    # the chart's hub (4.4.0: JupyterHub 5.5.0) and the image's singleuser agree
    assert pins["jupyterhub"].split(".")[0] == "5", pins["jupyterhub"]
    assert (
        "repo2docker" in CONFIG.read_text() and "environment.yml" in CONFIG.read_text()
    )
