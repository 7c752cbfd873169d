"""The one list of traced MPI functions (common/mpi_calls.list), parsed.

Used by common/gen_funcs.py (the function-id header every layer includes)
and libtrace/gen_wrappers.py (the tracer's wrappers). The roles are
documented at the top of the list.
"""
import os
import re
import sys

HANDLE_TYPES = {"MPI_Comm", "MPI_Datatype", "MPI_Op", "MPI_Info", "MPI_Group", "MPI_Win",
                "MPI_File", "MPI_Request", "MPI_Message"}


class Param:
    def __init__(self, text, where):
        decl, *roles = [t.strip() for t in text.split(":")]
        m = re.match(r"^(.*?)([A-Za-z_][A-Za-z0-9_]*)$", decl)
        if not m:
            sys.exit(f"{where}: cannot parse parameter '{text}'")
        self.ctype = m.group(1).strip()
        self.name = m.group(2)
        self.role, self.mod = None, None
        self.persistent = "persistent" in roles[1:]
        # further roles of the same parameter (Sendrecv_replace's buffer is sent and received)
        self.more_roles = [r for r in roles[1:] if r != "persistent"]
        if roles:
            self.role, _, self.mod = roles[0].partition(".")
        self.base = self.ctype.replace("const", "").replace("*", "").strip()
        self.pointer = "*" in self.ctype

    def ftype(self):
        """The parameter's type in the Fortran binding (everything by reference)."""
        if self.base == "void":
            return "void*"
        if self.base in ("MPI_Aint", "MPI_Offset"):
            return self.base + "*"
        if self.base in ("int", "MPI_Status") or self.base in HANDLE_TYPES:
            return "MPI_Fint*"
        sys.exit(f"no Fortran type for {self.ctype}")


CLASSES = ("init", "finalize", "abort", "send", "isend", "send_init", "recv", "irecv", "recv_init", "sendrecv",
           "probe", "iprobe", "start", "complete", "request_free", "cancel", "collective", "icollective", "comm_create",
           "comm_create_group", "comm_free", "local")
SEND_MODES = ("", "sync", "buffered")


class Func:
    def __init__(self, fid, kind, name, cls, params, where, replayed_as=None):
        self.id, self.kind, self.name, self.params, self.where = fid, kind, name, params, where
        self.replayed_as = replayed_as  # the name of the listed function merge and the skeleton use instead
        self.cls, _, self.mode = cls.partition(".")
        if self.cls not in CLASSES or self.mode not in SEND_MODES or (self.mode and "send" not in self.cls):
            sys.exit(f"{where}: unknown class '{cls}' (one of {', '.join(CLASSES)}; sends may add .sync or .buffered)")
        self.by_role = {r: p for p in params for r in [p.role] + p.more_roles if r}


def parse(path):
    funcs, ids, names = [], set(), set()
    for n, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{n}"
        head, _, plist = line.partition(":")
        parts = head.split()
        replayed_as = None
        if len(parts) == 5 and parts[4].startswith("~"):
            replayed_as = parts.pop()[1:]
        if len(parts) != 4 or parts[1] not in ("gen", "gen-c", "special"):
            sys.exit(f"{where}: expected 'ID KIND NAME CLASS [~REPLAYED_AS] [: PARAMETERS]'")
        fid, kind, name, cls = int(parts[0]), parts[1], parts[2], parts[3]
        if fid in ids or name in names:
            sys.exit(f"{where}: duplicate id {fid} or name {name}")
        ids.add(fid)
        names.add(name)
        params = [Param(t, where) for t in plist.split(",")] if plist.strip() else []
        if kind != "special" and not params:
            sys.exit(f"{where}: generated wrapper needs its parameters")
        funcs.append(Func(fid, kind, name, cls, params, where, replayed_as))
    by_name = {f.name: f for f in funcs}
    for f in funcs:
        target = by_name.get(f.replayed_as) if f.replayed_as else f
        if target is None or target.replayed_as or (target.cls, target.mode) != (f.cls, f.mode):
            sys.exit(f"{f.where}: ~{f.replayed_as} must name a listed function of the same class, not itself replayed as another")
    return funcs




def write_if_changed(path, text):
    """Write text to path unless it already holds it (keeps timestamps, so nothing rebuilds)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = open(path).read() if os.path.exists(path) else None
    if old != text:
        with open(path, "w") as fh:
            fh.write(text)
