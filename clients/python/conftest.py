# Runs this folder's tests and examples from the source tree, installed or not: the package is
# imported from src/, and its pytest plugin loaded here unless pip installed it (then pytest
# has loaded it already through its entry point, and loading it twice is an error).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))


def _installed() -> bool:
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    from importlib.metadata import entry_points

    try:
        group = entry_points(group="pytest11")
    except TypeError:  # Python < 3.10
        group = entry_points().get("pytest11", [])
    return any(ep.value == "petstore_client.pytest_plugin" for ep in group)


pytest_plugins = [] if _installed() else ["petstore_client.pytest_plugin"]
