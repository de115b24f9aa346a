"""Tenants of `tollgate serve`: who may use the service, with what policy
and quotas, read from a root-owned JSON file (docs/serve.md, "Tenants").

    {"tenants": {"acme": {"api_keys": ["e2b_<hex>"], "policy": "/etc/tollgate/acme.json",
                          "max_sandboxes": 20, "memory": "512m", "audit_dir": "/var/log/tollgate/acme"}}}
"""
from __future__ import annotations

import dataclasses
import hmac
import json
import os
import re
import stat
from typing import Any, Literal, cast

from .._errors import InvalidArgument, TollgateSDKError
from .._limits import parse_size

__all__ = ["Tenant", "Tenants", "TenantsError"]

KEY = re.compile(r"^e2b_[0-9a-f]{20,128}$")
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
KNOWN = {"api_keys", "policy", "max_sandboxes", "memory", "cpus", "max_memory", "max_cpus", "audit_dir", "runtime",
         "max_timeout"}
# What one sandbox counts toward max_memory and max_cpus when the tenant
# sets no memory or cpus of its own: the hardened profile's limits.
PROFILE_MEMORY = 512 << 20
PROFILE_CPUS = 1.0


class TenantsError(TollgateSDKError):
    """The tenants file is unusable; the message names the entry and the fix."""


@dataclasses.dataclass(frozen=True)
class Tenant:
    name: str
    api_keys: tuple[str, ...]
    policy: str | None
    max_sandboxes: int
    memory: str | None
    cpus: float | None
    audit_dir: str
    runtime: Literal["runsc", "runc"]
    max_timeout: int
    max_memory: int | None = None      # bytes, across the tenant's sandboxes
    max_cpus: float | None = None      # across the tenant's sandboxes

    @property
    def sandbox_memory(self) -> int:
        return parse_size(self.memory, "memory") if self.memory else PROFILE_MEMORY

    @property
    def sandbox_cpus(self) -> float:
        return self.cpus if self.cpus is not None else PROFILE_CPUS


class Tenants:
    """The tenants of one service, looked up by API key in constant time
    per key (a wrong key learns nothing from the timing)."""

    def __init__(self, tenants: dict[str, Tenant]) -> None:
        self.by_name = tenants

    @classmethod
    def load(cls, path: str, *, default_audit_root: str, default_runtime: str) -> "Tenants":
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            raise TenantsError("the tenants file %s cannot be opened: %s" % (path, e.strerror)) from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            # It holds API keys: only root may write it, nobody else read it.
            if os.geteuid() == 0 and st.st_uid != 0:
                raise TenantsError("the tenants file %s must be owned by root (chown root %s)" % (path, path))
            if stat.S_IMODE(st.st_mode) & 0o077:
                raise TenantsError("the tenants file %s holds API keys and is open to others (mode %o): "
                                   "chmod 600 %s" % (path, stat.S_IMODE(st.st_mode), path))
            raw = f.read(1 << 20)
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise TenantsError("the tenants file %s is not JSON: %s" % (path, e)) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("tenants"), dict) or not doc["tenants"]:
            raise TenantsError('the tenants file %s must be {"tenants": {"NAME": {"api_keys": [...]}}}' % path)
        seen: dict[str, str] = {}
        out: dict[str, Tenant] = {}
        for name, t in doc["tenants"].items():
            out[name] = _tenant(path, name, t, seen, default_audit_root, default_runtime)
        return cls(out)

    def by_key(self, key: str | None) -> Tenant | None:
        if not key or not KEY.match(key):
            return None
        found = None
        for t in self.by_name.values():
            for k in t.api_keys:
                if hmac.compare_digest(k, key):
                    found = t
        return found


def _tenant(path: str, name: Any, t: Any, seen: dict[str, str], audit_root: str, runtime: str) -> Tenant:
    where = "%s: tenant %r" % (path, name)
    if not isinstance(name, str) or not NAME.match(name):
        raise TenantsError("%s: a tenant name is lowercase letters, digits, '-' and '_'" % where)
    if not isinstance(t, dict):
        raise TenantsError("%s must be an object" % where)
    unknown = set(t) - KNOWN
    if unknown:
        raise TenantsError("%s: unknown keys %s (known: %s)" % (where, sorted(unknown), sorted(KNOWN)))
    keys = t.get("api_keys")
    if not isinstance(keys, list) or not keys:
        raise TenantsError("%s: api_keys must be a non-empty list" % where)
    for k in keys:
        if not isinstance(k, str) or not KEY.match(k):
            raise TenantsError("%s: an API key is 'e2b_' and 20 to 128 lowercase hex digits "
                               "(python3 -c 'import secrets; print(\"e2b_\" + secrets.token_hex(20))')" % where)
        if k in seen:
            raise TenantsError("%s: an API key is also tenant %r's" % (where, seen[k]))
        seen[k] = name
    policy = t.get("policy")
    if policy is not None and (not isinstance(policy, str) or not os.path.isabs(policy)):
        raise TenantsError("%s: policy must be an absolute path to a policy file" % where)
    if policy is not None and not os.path.isfile(policy):
        raise TenantsError("%s: the policy %s does not exist" % (where, policy))
    max_sb = t.get("max_sandboxes", 10)
    if isinstance(max_sb, bool) or not isinstance(max_sb, int) or not 1 <= max_sb <= 1000:
        raise TenantsError("%s: max_sandboxes must be an integer from 1 to 1000" % where)
    memory = t.get("memory")
    max_memory = t.get("max_memory")
    for key, v in (("memory", memory), ("max_memory", max_memory)):
        try:
            if v is not None:
                parse_size(v, key)
        except InvalidArgument:
            raise TenantsError('%s: %s is a size such as "512m"' % (where, key)) from None
    max_cpus = t.get("max_cpus")
    if max_cpus is not None and (isinstance(max_cpus, bool) or not isinstance(max_cpus, (int, float))
                                 or max_cpus <= 0):
        raise TenantsError("%s: max_cpus must be a positive number" % where)
    cpus = t.get("cpus")
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or cpus <= 0):
        raise TenantsError("%s: cpus must be a positive number" % where)
    audit_dir = t.get("audit_dir", os.path.join(audit_root, name))
    if not isinstance(audit_dir, str) or not os.path.isabs(audit_dir):
        raise TenantsError("%s: audit_dir must be an absolute path" % where)
    rt = t.get("runtime", runtime)
    if rt not in ("runsc", "runc"):
        raise TenantsError('%s: runtime must be "runsc" or "runc"' % where)
    max_timeout = t.get("max_timeout", 24 * 3600)
    if isinstance(max_timeout, bool) or not isinstance(max_timeout, int) or max_timeout < 1:
        raise TenantsError("%s: max_timeout is whole seconds, at least 1" % where)
    return Tenant(name, tuple(keys), policy, max_sb, memory, float(cpus) if cpus is not None else None,
                  audit_dir, cast(Literal["runsc", "runc"], rt), max_timeout,
                  parse_size(max_memory, "max_memory") if max_memory is not None else None,
                  float(max_cpus) if max_cpus is not None else None)
