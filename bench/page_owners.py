"""Who lives on a child's copied pages: every object's address range, mapped to pages, by kind.

Run in a forked child after the pages it copied were listed (``pagemap.copied_pages``): the
walk itself allocates, so it must come after. Objects the child made since the fork are the
ones ``gc`` tracks outside the frozen generation (the fork server froze everything it had);
everything else was inherited. Objects that ``gc`` does not track (strings, numbers, code,
untracked tuples) are found as referents, code objects through their fields.
"""

from __future__ import annotations

import array
import bisect
import ctypes
import gc
import os
import sys
from collections import Counter, defaultdict
from types import CodeType, FunctionType, ModuleType
from typing import Any

from pagemap import PAGE

INLINE = (str, bytes, tuple, int, CodeType)  # objects whose items live inside the object itself
GC_HEAD = 16
HAVE_GC = 1 << 14  # Py_TPFLAGS_HAVE_GC
MANAGED_DICT = 1 << 4  # Py_TPFLAGS_MANAGED_DICT (CPython 3.11)
POOL = 16 * 1024  # pymalloc's pool size in CPython 3.10+; its header comes first
POOL_HEADER = 48


def package(name: object) -> str:
    """A module name's top-level package, or ``?``."""
    return name.split(".")[0] if isinstance(name, str) else "?"


def file_package(path: str) -> str:
    """The package a source file belongs to: a site-packages top level, ``stdlib`` or ours."""
    if "site-packages/" in path:
        return package(path.split("site-packages/")[1].replace("/", "."))
    if "/lib/python3" in path:
        return "stdlib"
    parts = path.split("/")
    return next((p for p in ("robotlab", "robotd", "broker", "cli") if p in parts), "?")


class Catalog:
    """Every object reachable from gc's lists: its first page, how many pages, and its kind."""

    def __init__(self, hot: dict[str, list[int]] | None = None) -> None:
        # What a profiled probe child's run touched (hot_objects.profile): a label by address.
        self.heap: list[tuple[int, int]] = []
        self.types: dict[int, type] = {}  # every object's type, by address
        self.hot = {address: name for name, ids in reversed((hot or {}).items()) for address in ids}
        self.new: set[int] = {id(o) for o in gc.get_objects()}  # not frozen: made in the child
        gc.unfreeze()
        self.objects = gc.get_objects()
        self.seen: set[int] = set()
        self.pages: dict[int, Counter[str]] = defaultdict(Counter)
        # (allocation start, end, object address, kind)
        self.extents: list[tuple[int, int, int, str]] = []
        self._starts: list[int] = []
        self.module_dicts = {id(m.__dict__) for m in list(sys.modules.values())
                             if isinstance(m, ModuleType)}
        self.class_dicts = {id(r) for o in self.objects if isinstance(o, type)
                            for r in gc.get_referents(o) if type(r) is dict}

    def walk(self) -> None:
        stack: list[Any] = list(self.objects)
        while stack:
            obj = stack.pop()
            if id(obj) in self.seen:
                continue
            self.seen.add(id(obj))
            new = id(obj) in self.new
            self.place(obj, new)
            for ref in self._referents(obj):
                if not gc.is_tracked(ref) and id(ref) not in self.seen:
                    if new:
                        self.new.add(id(ref))
                    stack.append(ref)

    @staticmethod
    def _referents(obj: Any) -> list[Any]:
        if type(obj) is CodeType:
            return [obj.co_consts, obj.co_names, obj.co_varnames, obj.co_filename, obj.co_name,
                    obj.co_qualname, obj.co_linetable, obj.co_exceptiontable, *obj.co_consts]
        return gc.get_referents(obj)

    def place(self, obj: Any, new: bool) -> None:
        kind = ("new " if new else "") + self.kind(obj)
        self.types[id(type(obj))] = type(obj)
        start = id(obj)
        size = self._size(obj)
        self._add(start - self._preheader(type(obj)), start + max(size, 1), start, kind)
        storage = self._storage(obj)
        if storage:
            where, length = storage
            self._add(where, where + length, where, ("new " if new else "") + "storage of " + kind)

    def _add(self, begin: int, end: int, address: int, kind: str) -> None:
        self.extents.append((begin, end, address, kind))
        for page in range(begin // PAGE, (end - 1) // PAGE + 1):
            self.pages[page][kind] += 1

    @staticmethod
    def _preheader(cls: type) -> int:
        """Bytes in front of the object's address: the GC header, and a managed dict's two
        pointers."""
        gc_head = GC_HEAD if cls.__flags__ & HAVE_GC else 0
        return gc_head + (16 if cls.__flags__ & MANAGED_DICT else 0)

    def unowned(self, address: int) -> str:
        """Memory no object holds: a pymalloc pool's header, its free blocks, or the malloc heap."""
        if any(start <= address < end for start, end in self.heap):
            return "no known object: malloc heap"
        if address % POOL < POOL_HEADER:
            return "no known object: pymalloc pool header"
        return "no known object: free pymalloc block"

    def owner(self, address: int) -> tuple[str, str]:
        """The kind of object whose allocation holds ``address``, and which field of it."""
        if not self._starts:
            self.extents.sort()
            self._starts = [e[0] for e in self.extents]
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0 or address >= self.extents[i][1]:
            return self.unowned(address), ""
        _, _, obj, kind = self.extents[i]
        offset = address - obj
        field = "refcount" if offset == 0 else "pre-header" if offset < 0 else f"+{offset}"
        return kind, field

    @staticmethod
    def _size(obj: Any) -> int:
        cls = type(obj)
        if isinstance(obj, INLINE) or cls.__itemsize__:
            return max(sys.getsizeof(obj) - (GC_HEAD if gc.is_tracked(obj) else 0),
                       cls.__basicsize__)
        return cls.__basicsize__

    @staticmethod
    def _storage(obj: Any) -> tuple[int, int] | None:
        """A list's item array or a dict's key table: allocated apart from the object (CPython 3.11
        layout)."""
        cls = type(obj)
        if cls is list and obj:
            items = ctypes.c_void_p.from_address(id(obj) + 24).value or 0
            return items, max(1, sys.getsizeof(obj) - 56)
        if cls is dict:
            size = sys.getsizeof(obj) - cls.__basicsize__ - GC_HEAD
            keys = ctypes.c_void_p.from_address(id(obj) + 32).value or 0
            return (keys, size) if size > 0 else None
        return None

    def kind(self, obj: Any) -> str:
        hot = self.hot.get(id(obj))
        return f"{hot} ({self.plain_kind(obj)})" if hot else self.plain_kind(obj)

    def plain_kind(self, obj: Any) -> str:
        cls = type(obj)
        if cls is FunctionType:
            return f"function {package(obj.__module__)}"
        if cls is CodeType:
            return f"code {file_package(obj.co_filename)}"
        if isinstance(obj, type):
            return f"type {package(getattr(obj, '__module__', None))}"
        if cls is dict:
            oid = id(obj)
            if oid in self.module_dicts:
                return "module dict"
            return "class dict" if oid in self.class_dicts else "dict"
        if cls.__module__ == "builtins":
            return cls.__name__
        return f"{package(cls.__module__)}.{cls.__qualname__}"


def attribute(copied: dict[str, Any], hot: dict[str, list[int]] | None = None) -> dict[str, Any]:
    """Histograms of the copied pages by the kinds of object on them."""
    catalog = Catalog(hot)
    catalog.heap = copied["heap"]
    catalog.walk()
    on_inherited: Counter[str] = Counter()
    share: Counter[str] = Counter()
    on_new: Counter[str] = Counter()
    classes = Counter[str]()
    for page in copied["pages"]:
        kinds = catalog.pages.get(page)
        if not kinds:
            classes[catalog.unowned(page * PAGE)] += 1
            continue
        made = [k for k in kinds if k.startswith("new ")]
        if made:
            classes["holds objects the child made"] += 1
            on_new.update(made)
            continue
        classes["inherited objects only"] += 1
        on_inherited.update(kinds.keys())
        total = sum(kinds.values())
        for k, n in kinds.items():
            share[k] += n / total
    written = written_by_kind(catalog, copied["written"])
    written["freed or reused blocks, what the fork server had there"] = freed_blocks(
        catalog, copied)
    written["explained by"], written["unexplained pages holding"] = explain(
        catalog, copied["pages"], written.pop("written pages"))
    return {"counts": copied["counts"], "classes": dict(classes),
            "inherited pages holding": dict(on_inherited),
            "inherited share": {k: round(v, 1) for k, v in share.items()},
            "new kinds": dict(on_new), **written}


def written_by_kind(catalog: Catalog, words: list[tuple[int, int, int]]) -> dict[str, Any]:
    """The words that differ from the fork server's, by the object holding them: net writes.

    A page counts once for each kind written on it; pages copied with nothing differing were
    written and restored (a reference taken and dropped).
    """
    fields: Counter[str] = Counter()
    kinds_on_page: dict[int, set[str]] = defaultdict(set)
    for address, _, _ in words:
        kind, field = catalog.owner(address)
        fields[f"{kind} {field}".strip()] += 1
        kinds_on_page[address // PAGE].add(kind)
    by_page: Counter[str] = Counter()
    for kinds in kinds_on_page.values():
        by_page.update(kinds)
    return {"written words": dict(fields), "pages written by": dict(by_page),
            "pages with a net write": len(kinds_on_page), "written pages": set(kinds_on_page)}


def freed_blocks(catalog: Catalog, copied: dict[str, Any]) -> dict[str, int]:
    """What the fork server held in each pymalloc block that holds no object in the child, by type.

    A block the child freed (an inherited object whose last reference it dropped) or allocated
    and freed again: read the pool's block size from its header in the server's memory, then the
    block there, and look for a known type's address where an object's type pointer would be
    (after the reference count, behind a GC header or also a managed dict's pointers).
    """
    types = catalog.types
    blocks: set[int] = set()
    found: Counter[str] = Counter()
    fd = os.open(f"/proc/{copied['parent']}/mem", os.O_RDONLY)
    try:
        for address, _, _ in copied["written"]:
            if not catalog.owner(address)[0].endswith("free pymalloc block"):
                continue
            pool = address - address % POOL
            header = _read(fd, pool + 36, 4)
            if len(header) < 4:  # not a pool: a large allocation's own mapping
                continue
            size = (int.from_bytes(header, "little") + 1) * 16
            block = pool + POOL_HEADER + (address - pool - POOL_HEADER) // size * size
            if block in blocks:
                continue
            blocks.add(block)
            words = array.array("Q", _read(fd, block, 48).ljust(48, b"\0"))
            cls = next((types[w] for w in (words[1], words[3], words[5]) if w in types), None)
            found["(no object there in the server)" if cls is None
                  else f"{cls.__module__}.{cls.__qualname__}"] += 1
    finally:
        os.close(fd)
    return dict(found)


def _read(fd: int, address: int, size: int) -> bytes:
    try:
        return os.pread(fd, size, address)
    except OSError:  # unmapped in the server
        return b""


EXPLANATIONS = ("hot code", "hot function", "hot global", "hot builtin call", "hot const")


def explain(catalog: Catalog, pages: list[int],
            written: set[int]) -> tuple[dict[str, int], dict[str, int]]:
    """Each copied page's likeliest cause, first match wins: a net write, then what the probe saw
    touched.

    Returns the count per cause, and what the pages no cause explains hold (a page once per kind).
    """
    causes: Counter[str] = Counter()
    rest: Counter[str] = Counter()
    for page in pages:
        kinds = catalog.pages.get(page, Counter())
        if page in written:
            causes["a word differs (net write)"] += 1
            continue
        cause = next((e for e in EXPLANATIONS if any(k.startswith(e) for k in kinds)), None)
        causes[cause or "nothing the probe saw touched"] += 1
        if cause is None:
            rest.update(kinds.keys())
    return dict(causes), dict(rest)


def render(result: dict[str, Any], top: int = 30) -> str:
    """The attribution as plain text: page classes, then the kinds that hold the most copied
    pages."""
    lines = [f"pagemap: {result['counts']}", "copied pages by what is on them:"]
    lines += [f"  {name}: {n}"
              for name, n in sorted(result["classes"].items(), key=lambda kv: -kv[1])]
    lines.append(f"pages with a net write: {result['pages with a net write']}")
    for title, key in (("copied pages by likeliest cause", "explained by"),
                       ("pages no cause explains, holding", "unexplained pages holding"),
                       ("pages with a net write, by kind written (a page once per kind)",
                        "pages written by"),
                       ("words written, by kind and field", "written words"),
                       ("pymalloc blocks freed or reused, what the server had there",
                        "freed or reused blocks, what the fork server had there"),
                       ("inherited-only pages, share by object count", "inherited share"),
                       ("inherited-only pages holding at least one", "inherited pages holding"),
                       ("pages with child-made objects, holding", "new kinds")):
        lines.append(f"{title}:")
        ranked = sorted(result[key].items(), key=lambda kv: -kv[1])[:top]
        lines += [f"  {n:8.1f}  {name}" for name, n in ranked]
    return "\n".join(lines)
