"""The Python floor's layering (docs/architecture.md), run by
tests/layering.sh: in sdk/tollgate_sdk the core (the modules directly in
it) imports only the standard library and the core, never
tollgate_sdk.mcp, tollgate_sdk.serve, tollgate_sdk._listener or an
integration; _listener/ (the HTTP listeners' bounds, on uvicorn) the core
and itself; mcp/ and serve/ the core, _listener/ and themselves;
integrations/ the core, itself and mcp/ (run_python's description of the governed tools, which the OpenAI Agents
tool gives its model too).  Nothing imports an integration.  Every import
counts, at the top or in a function.  Prints each one that points
the wrong way and exits 1, or one line and 0."""
import ast
import os
import sys

PKG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk", "tollgate_sdk")
SUBPACKAGES = ("_listener", "mcp", "serve", "integrations")
# floor -> the floors of the package it may import besides the core and itself
MAY = {"core": (), "_listener": (), "mcp": ("_listener",), "serve": ("_listener",), "integrations": ("mcp",)}


def floor_of(rel):
    """'core', 'mcp', 'serve' or 'integrations' for a path under PKG."""
    top = rel.split(os.sep)[0]
    return top if top in SUBPACKAGES else "core"


def imports_of(rel):
    """(line, absolute module name) of every import in the file."""
    parts = ["tollgate_sdk"] + rel[:-3].split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    package = parts if rel.endswith("__init__.py") else parts[:-1]
    with open(os.path.join(PKG, rel), encoding="utf-8") as f:
        tree = ast.parse(f.read(), rel)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                yield node.lineno, node.module or ""
                continue
            base = package[:len(package) - (node.level - 1)]
            if node.module:
                yield node.lineno, ".".join(base + [node.module])
            else:
                for a in node.names:
                    yield node.lineno, ".".join(base + [a.name])


def wrong(floor, module):
    """Why floor may not import module, or None."""
    parts = module.split(".")
    if parts[0] != "tollgate_sdk":
        if floor == "core" and parts[0] not in sys.stdlib_module_names:
            return "the core imports only the standard library and itself"
        return None
    target = parts[1] if len(parts) > 1 and parts[1] in SUBPACKAGES else "core"
    if target in ("core", floor) or target in MAY[floor]:
        return None
    if floor == "core":
        return "the core imports only the standard library and itself"
    return "%s may import the core%s and itself, not tollgate_sdk.%s" % (
        "tollgate_sdk." + floor,
        "".join(", tollgate_sdk." + m for m in MAY[floor]), target)


def main():
    bad = 0
    count = 0
    for d, dirs, files in os.walk(PKG):
        dirs[:] = sorted(x for x in dirs if x not in ("_container", "__pycache__"))
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(d, f), PKG)
            count += 1
            for line, module in imports_of(rel):
                why = wrong(floor_of(rel), module)
                if why:
                    print("layering: sdk/tollgate_sdk/%s: line %d: imports %s (%s)" % (rel, line, module, why),
                          file=sys.stderr)
                    bad = 1
    if not bad:
        print("layering: the Python floor's imports point down (%d modules)" % count)
    return bad


if __name__ == "__main__":
    sys.exit(main())
